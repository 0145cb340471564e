-- Test-only entry points of the differential test (differential.rs), loaded after the library's
-- own shared code (scripts::shared_code): each runs one production function on a case's inputs and
-- returns its outputs as strings (a Lua number given to Redis as a number would be truncated to an
-- integer, hiding a fraction). Registered as anonymous functions: the shared code's top level is
-- close to Lua's limit of 200 locals.

-- A number as text ('' for nil), exact for whole numbers (tostring of 600.0 is "600").
local function txt(v)
  if v == nil then return '' end
  return tostring(v)
end

-- A guard's changes as {moved, level, recent median, baseline} texts.
local function changes_txt(changes)
  local out = {}
  for i, c in ipairs(changes) do out[i] = {c[1], txt(c[2]), txt(c[3]), txt(c[4])} end
  return out
end

-- The guard fields of hash `k`, '' for a missing one.
local GUARD_FIELDS = {'lb', 'lr', 'll', 'lsc', 'lcm', 'lo', 'lc', 'lt'}
local function guard_txt(k)
  local v = redis.call('HMGET', k, unpack(GUARD_FIELDS))
  for i = 1, #GUARD_FIELDS do v[i] = v[i] or '' end
  return v
end

-- Writes the fields of GUARD_FIELDS given from args[from] on (an empty one is left out).
local function put_guard(k, args, from)
  for i, f in ipairs(GUARD_FIELDS) do
    if args[from + i - 1] ~= '' then redis.call('HSET', k, f, args[from + i - 1]) end
  end
end

-- args: maxe, gape, level, ip cap. Returns guarded's cap and gap, and the IP's cap and gap at that
-- level as release (the cap) and grant (the gap) take them.
redis.register_function('difftest_guarded', function(_, args)
  local level = tonumber(args[3])
  local maxe, gape = guarded(tonumber(args[1]), tonumber(args[2]), level)
  local ipcap = guarded(tonumber(args[4]), 0, level)
  local _, ipgap = guarded(1, 0, level)
  return {txt(maxe), txt(gape), txt(ipcap), txt(ipgap)}
end)

-- args: kind, depth, pages, res, smf, smb, maxp, maxd, maxr, maxsf, maxsb. Returns the code or ''.
redis.register_function('difftest_budget', function(_, args)
  local n = {}
  for i = 2, 11 do n[i] = tonumber(args[i]) end
  return txt(over_budget(args[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], n[11]))
end)

-- keys[1]: the prefix. args: the guard's fields (GUARD_FIELDS), the answering host ('' for a
-- host's own guard), the load, the host's baseline (for an IP's guard), then the samples. Returns
-- the changes and the fields after.
redis.register_function('difftest_observe', function(keys, args)
  P = keys[1]
  local k = P .. ':difftest:guard'
  redis.call('DEL', k)
  put_guard(k, args, 1)
  local tag = args[9]
  if tag == '' then tag = nil end
  local load, hbase = tonumber(args[10]), tonumber(args[11])
  local samples, texts = {}, {}
  for i = 12, #args do
    samples[#samples + 1] = tonumber(args[i])
    texts[#texts + 1] = args[i]
  end
  samples.texts = texts
  local changes = observe(k, samples, tag, nil, load, hbase)
  return {changes_txt(changes), guard_txt(k)}
end)

-- keys[1]: the prefix. args: the host's next, qg and guard fields (GUARD_FIELDS but lt), '1' when
-- a live audit saw a 429, the number of lanes, each lane's in-flight cap and gap, then the
-- signals (a sample, a quota, a hold: '' for none), now and the answer's load. Runs recompute,
-- then apply_signals. Returns recompute's gap ('' for an unused host), the host's maxe and gape
-- and the cap a claim meets with and without the slow start, then the signals' changes, and the
-- host's next, qg, maxe, gape and guard fields after.
redis.register_function('difftest_pace', function(keys, args)
  P = keys[1]
  local host = 'difftest.host'
  local hk = k_host(host)
  redis.call('DEL', hk, k_hmax(host), k_hgap(host), k_hslow(host), k_hostwait(host))
  redis.call('HSET', hk, 'inf', '0', 'next', args[1])
  if args[2] ~= '' then redis.call('HSET', hk, 'qg', args[2]) end
  put_guard(hk, {args[3], args[4], args[5], args[6], args[7], args[8], args[9], ''}, 1)
  if args[10] == '1' then redis.call('SADD', k_hslow(host), '1') end
  local lanes = tonumber(args[11])
  for i = 1, lanes do
    local lane = 'lane' .. i
    redis.call('ZADD', k_hmax(host), args[10 + 2 * i], lane)
    redis.call('ZADD', k_hgap(host), args[11 + 2 * i], lane)
  end
  local j = 12 + 2 * lanes
  local gape = recompute(host)
  local h = redis.call('HMGET', hk, unpack(F_HOST_GRANT))
  local maxe = num(h[F_HOST_GRANT.maxe], 1)
  local before = {h[F_HOST_GRANT.maxe] or '', h[F_HOST_GRANT.gape] or '',
    txt(slow_started(maxe, h[F_HOST_GRANT.lo], '1')), txt(slow_started(maxe, h[F_HOST_GRANT.lo], '0'))}
  local samples, texts = {}, {}
  if args[j] ~= '' then samples[1], texts[1] = tonumber(args[j]), args[j] end
  samples.texts = texts
  local changes = apply_signals(host, '', tonumber(args[j + 3]), samples, tonumber(args[j + 1]),
    tonumber(args[j + 2]), nil, tonumber(args[j + 4]), 1)
  local after = redis.call('HMGET', hk, 'next', 'qg', 'maxe', 'gape')
  for i = 1, 4 do after[i] = after[i] or '' end
  local guard = guard_txt(hk)
  for i = 1, 7 do after[#after + 1] = guard[i] end
  return {txt(gape), before, changes_txt(changes), after}
end)

-- args: the IP guard's level and slow start count ('' for none), the per-IP cap, then requests
-- in flight. Returns the cap a claim meets with and without the slow start (claim's
-- slow_started(guarded(...))).
redis.register_function('difftest_ip_cap', function(_, args)
  local cap = guarded(tonumber(args[3]), 0, tonumber(args[1]))
  local open = args[2]
  if open == '' then open = nil end
  return {txt(slow_started(cap, open, '1')), txt(slow_started(cap, open, '0'))}
end)

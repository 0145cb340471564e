-- reap: ARGV = A_REAP (params.rs: now, max, ip_cap). Leases past their deadline give back their slots; their tasks return to
-- their lanes with one more expired lease counted (lexp), so a task that kills or hangs every worker
-- that takes it is given up after MAX_LEASE_EXPIRIES; so do a batch's further tasks (the worker may
-- have been working on any of them). Returns how many were reclaimed. Each lease runs under pcall:
-- one whose lease, site, lane or host cannot be read quarantines its site (quarantine.lua) and is
-- dropped, and the others are reclaimed all the same.
local now, max, ipcap = tonumber(ARGV[A_REAP.now]), tonumber(ARGV[A_REAP.max]), tonumber(ARGV[A_REAP.ip_cap])
local ids = redis.call('ZRANGEBYSCORE', k_leases(), '-inf', now, 'LIMIT', 0, max)
local function one(id)
  local L = release(id, now, ipcap)
  if not L then
    -- A deadline without its lease: nothing to give back.
    redis.call('ZREM', k_leases(), id)
    return
  end
  local lane, site = L.lane, L.site
  local sk = k_site(site)
  -- A site forgotten meanwhile (its audit ended) takes nothing back.
  if redis.call('EXISTS', sk) == 0 then return end
  local tasks = I(1 + #L.more)
  if redis.call('HGET', sk, 'cancelled') == '1' or not redis.call('HGET', k_lane(lane), 'robots') then
    redis.call('HINCRBY', sk, 'completed', tasks)
    check_done(site)
  else
    redis.call('HINCRBY', k_lexp(lane), L.blob, 1)
    if L.browser == '1' or L.browser == 'r' then
      bpush(lane, site, L.blob, 0, L.browser == 'r' and '1' or '0')
    else
      push(lane, L.blob, L.robots, L.prio, 0, now)
    end
    for _, t in ipairs(L.more) do
      redis.call('HINCRBY', k_lexp(lane), t[1], 1)
      push(lane, t[1], '0', t[2], 0, now)
    end
    redis.call('HINCRBY', sk, 'queued', tasks)
    schedule(lane, now)
  end
end
for _, id in ipairs(ids) do
  UNIT.site, UNIT.lane = nil, nil
  local ok, err = pcall(one, id)
  local schema = not ok and schema_error(err)
  if schema then return schema end
  if not ok then
    local lease = redis.pcall('HMGET', k_lease(id), unpack(F_LEASE_BLAME))
    if lease.err then lease = {} end
    blame(UNIT.site or lease[F_LEASE_BLAME.site], UNIT.lane or lease[F_LEASE_BLAME.lane], id, err, now)
    -- Its site is quarantined: the lease goes, with its slots when they can be freed now (blame
    -- repaired the host), else as it is.
    if not pcall(release, id, now, ipcap) then
      redis.call('DEL', k_lease(id), k_leasem(id))
      redis.call('ZREM', k_leases(), id)
    end
  end
end
return #ids

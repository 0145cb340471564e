-- Leases: granting one (`grant`, claim and claim_browser) and freeing its slots (`release`).
-- Loaded after quarantine.lua (scripts.rs, SHARED).

-- Grants a lease of `blob` on `lane` (claim and claim_browser): a slot of the host (`hk`, whose
-- fields `h` the caller read as F_HOST_GRANT), the host's next start
-- `next_start`, a slot of its IP, the address lookup when it is due, the lease record (`extra`:
-- more field/value pairs) and the site's counters. `further` (may be nil): more tasks of the lane
-- for the same lease, their blobs from index 2 of a list (ZRANGE's answer, whose first is the
-- lease's own task: no table per task), which the caller has copied with their scores into the
-- lease's `leasem` under the id `id` it took; those whose leases expired before are left out (they
-- are leased alone, where their count is kept; the caller takes them out of `leasem`). Returns
-- the lease's id, whether it looks the address up (1/0), its deadline, how often the task's leases
-- expired before, and the further tasks taken: a list of blobs, the index of its first, and their
-- number.
local function grant(lane, host, hk, h, blob, site, worker, now, ttl, next_start, is_robots, prio, extra, ipl, further, id)
  local ip = h[F_HOST_GRANT.ip]
  local inf, ipx = num(h[F_HOST_GRANT.inf], 0), num(h[F_HOST_GRANT.ipx], nil)
  -- How often the task's leases expired before (and the further tasks'); `x` on the lease tells
  -- its completion to clear it.
  local expired, taken, from = 0, further, 2
  if redis.call('EXISTS', k_lexp(lane)) == 1 then
    local names = {blob}
    for i = 2, #(further or {}) do names[i] = further[i] end
    local counts = redis.call('HMGET', k_lexp(lane), unpack(names))
    expired = num(counts[1], 0)
    if further then
      taken, from = {}, 1
      for i = 2, #further do
        if not counts[i] then taken[#taken + 1] = further[i] end
      end
    end
  end
  local nt = 0
  if taken then nt = #taken - from + 1 end
  -- The site's counts first: a site hash that cannot be read fails the grant here, before anything
  -- shared (the host's and the IP's slots, the worker's count) is written.
  local k = I(1 + nt)
  redis.call('HINCRBY', k_site(site), 'queued', '-' .. k)
  redis.call('HINCRBY', k_site(site), 'leased', k)
  redis.call('HSET', hk, 'inf', I(inf + 1), 'next', I(next_start))
  if ip then
    bump(k_ipf(ip), 1, 0)
    if ipl > 0 then
      -- The IP's guard is slowed: the next request to it waits its gap (0.5 s per level doubled).
      local _, ipgap = guarded(1, 0, ipl)
      redis.call('HSET', k_ipg(ip), 'next', now + ipgap)
      redis.call('PEXPIRE', k_ipg(ip), LINGER)
    end
  end
  id = id or bump(k_leaseid(), 1, now)
  local ids = I(id)
  local resolve = 0
  if not ipx or ipx <= now then
    resolve = 1
    redis.call('HSET', hk, 'ipr', ids)
  end
  local deadline = now + ttl
  local ds = I(deadline)
  local fields = {'blob', blob, 'lane', lane, 'host', host, 'ip', ip or '', 'robots', is_robots, 'prio', I(prio),
    'site', site, 'worker', worker, 'started', I(now), 'deadline', ds}
  for _, v in ipairs(extra) do fields[#fields + 1] = v end
  if expired > 0 then
    fields[#fields + 1] = 'x'
    fields[#fields + 1] = '1'
  end
  -- The further tasks are in `leasem`, which the claim filled by ZRANGESTORE: Redis copies them
  -- without a Lua string made of any, and the lease hash keeps only small fields (a blob per field,
  -- or all of them packed by cmsgpack, cost more than the rest of the grant).
  if nt > 0 then
    fields[#fields + 1] = 'n'
    fields[#fields + 1] = I(nt)
    fields[#fields + 1] = 'mz'
    fields[#fields + 1] = '1'
  end
  redis.call('HSET', k_lease(ids), unpack(fields))
  redis.call('ZADD', k_leases(), ds, ids)
  bump_worker(worker, '1')
  return id, resolve, deadline, expired, taken, from, nt
end

-- Frees a lease's slots and wakes as many lanes parked on them as are free (`ipcap`: the per-IP
-- cap); the site's count of leased tasks too, unless the caller does that (`site_later`: it reads
-- the site hash anyway). Returns the lease's fields (blob, lane, host, ip, robots, prio, site,
-- started, browser, x: whether the task's leases expired before) or nil, with `more` its further
-- tasks as {blob, priority} (see grant; `false` before `more_from`, whose blobs the caller does
-- not need: a completion reads only those of tasks its worker did not start), `inf` what its host
-- has in flight now (so `inf + 1` when the answer came) and, with an IP, `ipload` its requests in
-- flight when the answer came, `ipg` its IP guard's fields as `observe` reads them and
-- `fair` whether every slot it freed on the IP went to a lane of an idle host (wake_ip).
local function release(id, now, ipcap, site_later, more_from)
  local lk = k_lease(id)
  local r = redis.call('HMGET', lk, unpack(LEASE_FIELDS))
  -- Its fields by name (keys.rs, LEASE_FIELDS); false for one the lease lacks.
  local L = {}
  for i, f in ipairs(LEASE_FIELDS) do L[f] = r[i] end
  if not L.blob then return nil end
  UNIT.site, UNIT.lane = L.site, L.lane
  -- Everything read as a number first (the lease's and its host's), so one that cannot be read
  -- fails the release before anything is written: the lease stays for its unit's quarantine.
  local nm = num(L.n, 0)
  -- A batch lease whose further tasks are not in `leasem` (no `mz`) was granted before frontier
  -- schema 2, which kept them in the lease hash (`mp`, or `m1`.. and `q1`..): not read any more.
  -- Said so before anything is written, so the lease stays as it is for an older version to
  -- release (docs/runbook.md, "Upgrading").
  if nm > 0 and not L.mz then
    old_schema('lease ' .. id .. ' is a batch lease of frontier schema 1 (its further tasks in the lease hash, '
      .. '`mp` or `m1`..), which this version does not read')
  end
  local hk = k_host(L.host)
  local h = redis.call('HMGET', hk, unpack(F_HOST_RELEASE))
  local h_inf, h_maxe, h_gape, h_next = num(h[F_HOST_RELEASE.inf], nil), num(h[F_HOST_RELEASE.maxe], 1),
    num(h[F_HOST_RELEASE.gape], 0), num(h[F_HOST_RELEASE.next], 0)
  if L.worker and bump_worker(L.worker, '-1') <= 0 then redis.call('HDEL', k_wl(), L.worker) end
  L.more = {}
  more_from = more_from or 1
  for i = 1, math.min(more_from - 1, nm) do L.more[i] = false end
  if nm >= more_from and L.mz then
    -- Those from `more_from` on, in their order (their scores are the queue's).
    local m = redis.call('ZRANGE', k_leasem(id), I(more_from - 1), '-1', 'WITHSCORES')
    for i = more_from, nm do
      local j = 2 * (i - more_from)
      L.more[i] = {m[j + 1], math.floor(tonumber(m[j + 2]) / PRIO)}
    end
  end
  if L.mz then redis.call('DEL', lk, k_leasem(id)) else redis.call('DEL', lk) end
  redis.call('ZREM', k_leases(), id)
  local host_room = 0
  if h[F_HOST_RELEASE.blease] == tostring(id) then
    -- The host's page load ended: the next one starts max(gap, PAGE_LOAD_GAP) after this end (by
    -- its lease's `browser`: '1' the check's, 'r' a render's).
    local floor = PAGE_LOAD_GAP[L.browser] or PAGE_LOAD_GAP['1']
    redis.call('HDEL', hk, 'blease')
    redis.call('HSET', hk, 'next', math.max(h_next, now + math.max(h_gape, floor)))
  end
  local host_inf = 0
  if h_inf then
    local inf = math.max(h_inf - 1, 0)
    host_inf = inf
    redis.call('HSET', hk, 'inf', I(inf))
    if h[F_HOST_RELEASE.ipr] == tostring(id) then
      redis.call('HDEL', hk, 'ipr')
      h[F_HOST_RELEASE.ipr] = false
    end
    if not h[F_HOST_RELEASE.ipr] then host_room = h_maxe - inf end
  end
  if not site_later and redis.call('EXISTS', k_site(L.site)) == 1 then
    redis.call('HINCRBY', k_site(L.site), 'leased', '-' .. I(1 + nm))
  end
  wake(k_hostwait(L.host), now, host_room)
  if L.ip ~= '' then
    local n = bump(k_ipf(L.ip), -1, 1)
    if n <= 0 then
      redis.call('DEL', k_ipf(L.ip))
      n = 0
    end
    -- The IP's guard, read once for the cap here and for the completion's sample (apply_signals).
    -- It is every host's at the address: a field that cannot be read resets it, never blames.
    local g = redis.pcall('HMGET', k_ipg(L.ip), unpack(F_GUARD))
    local unreadable = g.err ~= nil
    for _, name in ipairs({'ll', 'lb', 'lsc', 'lcm', 'lo', 'lc'}) do
      local v = not unreadable and g[F_GUARD[name]]
      if v and not tonumber(v) then unreadable = true end
    end
    if unreadable then
      redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable latency guard of IP ' .. L.ip)
      redis.call('DEL', k_ipg(L.ip))
      g = {}
    end
    L.ipg = g
    -- The IP's requests in flight when the answer came, itself included (the guard's slow start).
    L.ipload = n + 1
    L.fair = wake_ip(L.ip, now, guarded(ipcap, 0, num(g[F_GUARD.ll], 0)) - n)
  end
  L.inf = host_inf
  return L
end

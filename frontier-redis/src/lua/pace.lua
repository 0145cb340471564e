-- The pace of hosts and server IPs: the limits in force (`recompute`, mirroring
-- shoal_shared::pace::HostPace), the latency guard's effect on them (`guarded`), and lanes
-- joining and leaving a host. Loaded after common.lua (scripts.rs, SHARED).

-- The in-flight cap and gap with the latency guard's level applied, mirroring
-- shoal_shared::latency::guarded: the cap halved per level (at least 1), the gap doubled per level
-- from at least GUARD_FLOOR_GAP (at most MAX_GAP, never lowered).
local function guarded(maxe, gape, level)
  if level <= 0 then return maxe, gape end
  local f = 2 ^ math.min(level, GUARD_MAX_LEVEL)
  return math.max(1, math.floor(maxe / f)), math.max(gape, math.min(math.max(gape, GUARD_FLOOR_GAP) * f, MAX_GAP))
end

-- The in-flight cap a claim meets, mirroring HostPace::allowed and IpPace::cap: `cap` (the limit
-- with the guard's level applied) lowered to the slow start's count `open` (missing or 0: 1) when
-- `slow_start` (the claim's argument) is '1'.
local function slow_started(cap, open, slow_start)
  if slow_start ~= '1' then return cap end
  return math.min(cap, math.max(num_or(open, 0), 1))
end

-- A server IP's guard: its level, the earliest next start to it and the slow start's count (0, 0,
-- nil without an address).
local function ip_pace(ip)
  if not ip or ip == '' then return 0, 0, nil end
  local g = redis.pcall('HMGET', k_ipg(ip), unpack(F_IP_PACE))
  if g.err then g = {[F_IP_PACE.ll] = '-', [F_IP_PACE.next] = false} end
  local gl, gn, go = g[F_IP_PACE.ll], g[F_IP_PACE.next], g[F_IP_PACE.lo]
  local ll, nx, lo = num_or(gl, nil), num_or(gn, nil), num_or(go, nil)
  if (gl and not ll) or (gn and not nx) or (go and not lo) then
    -- A server IP's guard is every host's at the address, no audit's: reset, never blamed.
    redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable latency guard of IP ' .. ip)
    redis.call('DEL', k_ipg(ip))
    lo = nil
  end
  return ll or 0, nx or 0, lo
end

-- Requests in flight to a server IP (shared by every host at the address: an unreadable count is
-- reset, never blamed on the lane that reads it).
local function ip_inflight(ip)
  local v = redis.pcall('GET', k_ipf(ip))
  if type(v) == 'table' then v = '-' end
  local n = num_or(v, nil)
  if v and not n then
    redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable in-flight count of IP ' .. ip)
    redis.call('DEL', k_ipf(ip))
  end
  return n or 0
end

-- The limits in force from what the host's live lanes ask and whether a live audit saw a 429 on
-- it, mirroring shoal_shared::pace::HostPace::combine: fewest in flight (hmax), longest gap
-- including Crawl-delay (hgap), slow mode while hslow has an audit, then a stated quota's gap (qg)
-- and the latency guard's level (ll, see apply_signals below). A host no lane and no slow
-- audit uses keeps only its clock, until HOST_LINGER after its next allowed start. Returns the gap
-- in force, or nil for an unused host.
local function recompute(host)
  local hk = k_host(host)
  local m = redis.call('ZRANGE', k_hmax(host), 0, 0, 'WITHSCORES')
  local slow = redis.call('SCARD', k_hslow(host)) > 0
  if #m == 0 then
    if not slow and redis.call('EXISTS', hk) == 1 then
      redis.call('PEXPIREAT', hk, num(redis.call('HGET', hk, 'next'), 0) + LINGER)
      redis.call('DEL', k_hostwait(host))
    end
    return nil
  end
  redis.call('PERSIST', hk)
  local top = redis.call('ZRANGE', k_hgap(host), -1, -1, 'WITHSCORES')
  local maxe, gape = tonumber(m[2]), num(top[2], 0)
  local sig = redis.call('HMGET', hk, unpack(F_HOST_SIGNAL))
  gape = math.max(gape, num(sig[F_HOST_SIGNAL.qg], 0))
  if slow then
    maxe = SLOW_MAX_IN_FLIGHT
    gape = math.max(gape, SLOW_GAP)
  end
  maxe, gape = guarded(maxe, gape, num(sig[F_HOST_SIGNAL.ll], 0))
  redis.call('HSET', hk, 'maxe', maxe, 'gape', gape)
  return gape
end

-- A lane starts using its host: its audit's limits count in the host's pace, and an audit new to
-- the host has the host's address looked up again before its first request.
local function join_host(lane, host, audit, pmax, pgap)
  local hk = k_host(host)
  if redis.call('EXISTS', hk) == 0 then
    redis.call('HSET', hk, 'inf', 0, 'next', 0)
  end
  redis.call('ZADD', k_hmax(host), pmax, lane)
  redis.call('ZADD', k_hgap(host), pgap, lane)
  if redis.call('SADD', k_ahosts(audit), host) == 1 then
    redis.call('HDEL', hk, 'ipx')
  end
  recompute(host)
end

-- A lane ends (its site is done, or its robots.txt closed it): it asks nothing of the host.
local function leave_host(lane, host)
  redis.call('ZREM', k_hmax(host), lane)
  redis.call('ZREM', k_hgap(host), lane)
  recompute(host)
end

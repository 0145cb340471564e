-- claim_browser: ARGV = A_CLAIM (params.rs: claim's; batch is not read)
-- Leases the oldest browser task whose host is free: no browser lease of the host out (page loads
-- are serialised), a slot of the host and of its IP (as lowered by the IP's latency guard) free,
-- its next start come. The host's next start moves max(gap, PAGE_LOAD_GAP) ahead (the check's, or
-- a render's for a render of the rendered crawl).
-- Returns as claim.lua: {'lease', …} | {'wait', at} | {'idle'}.
local now, worker = tonumber(ARGV[A_CLAIM.now]), ARGV[A_CLAIM.worker]
local ttl, ipcap = tonumber(ARGV[A_CLAIM.ttl]), tonumber(ARGV[A_CLAIM.ip_cap])
local ids = redis.call('ZRANGE', k_bq(), 0, 99)
if #ids == 0 then return {'idle'} end
local fenced = fence_raised()
if fenced and now < fence_hold(fenced, ttl) then return {'wait', I(fence_hold(fenced, ttl))} end
local earliest = nil -- the earliest start of a task only its host's clock holds back
-- One task: its lease, or nil. Run under pcall: a task whose state cannot be read quarantines its
-- site (quarantine.lua) and the claim goes on.
local function one(id)
  local t = redis.call('HMGET', k_btask(id), unpack(F_BTASK))
  UNIT.site, UNIT.lane = t[F_BTASK.site], t[F_BTASK.lane]
  local lane, site, blob, nb = t[F_BTASK.lane], t[F_BTASK.site], t[F_BTASK.blob], num(t[F_BTASK.nb], 0)
  local kind = t[F_BTASK.render] == '1' and 'r' or '1'
  local floor = PAGE_LOAD_GAP[kind]
  local l = lane and redis.call('HMGET', k_lane(lane), unpack(F_LANE_BROWSER)) or {}
  local host = l[F_LANE_BROWSER.host]
  if not host or l[F_LANE_BROWSER.robots] == 'c' then
    -- Its lane is gone or closed: nothing to load, the task counts as done.
    redis.call('ZREM', k_bq(), id)
    redis.call('DEL', k_btask(id))
    if site then
      redis.call('SREM', k_sbq(site), id)
      redis.call('HINCRBY', k_site(site), 'queued', -1)
      redis.call('HINCRBY', k_site(site), 'completed', 1)
      check_done(site)
    end
  else
    local hk = k_host(host)
    local h = redis.call('HMGET', hk, unpack(F_HOST_GRANT))
    local inf, maxe = num(h[F_HOST_GRANT.inf], 0), num(h[F_HOST_GRANT.maxe], 1)
    local gape, nxt, ip = num(h[F_HOST_GRANT.gape], 0), num(h[F_HOST_GRANT.next], 0), h[F_HOST_GRANT.ip]
    maxe = slow_started(maxe, num(h[F_HOST_GRANT.lo], 0), ARGV[A_CLAIM.slow_start])
    nxt = fenced_start(fenced, nxt, math.max(gape, floor))
    local free = not h[F_HOST_GRANT.blease] and not h[F_HOST_GRANT.ipr] and inf < maxe
    local ipl = 0
    if free and ip then
      local ipo, ipn
      ipl, ipn, ipo = ip_pace(ip)
      if ip_inflight(ip) >= slow_started(guarded(ipcap, 0, ipl), ipo, ARGV[A_CLAIM.slow_start]) then free = false end
    end
    if free then
      local at = math.max(nxt, nb)
      if at > now then
        earliest = math.min(earliest or at, at)
      else
        redis.call('ZREM', k_bq(), id)
        redis.call('DEL', k_btask(id))
        redis.call('SREM', k_sbq(site), id)
        local lid, resolve, deadline, expired =
          grant(lane, host, hk, h, blob, site, worker, now, ttl, now + math.max(gape, floor), '0', 1, {'browser', kind}, ipl)
        redis.call('HSET', hk, 'blease', lid)
        local rat = num(l[F_LANE_BROWSER.rat], 0)
        return {'lease', lid, blob, host, ip or '', now, deadline, gape, resolve, expired, rat, epoch(now)}
      end
    end
  end
  return nil
end
for _, id in ipairs(ids) do
  UNIT.site, UNIT.lane = nil, nil
  local ok, answer = pcall(one, id)
  if not ok then
    blame(UNIT.site, UNIT.lane, nil, answer, now)
    -- Its site's browser tasks are dropped with it; a task of no site goes.
    redis.pcall('ZREM', k_bq(), id)
  elseif answer then
    return answer
  end
end
-- Hosts busy with a page load (or full) wait for a completion, as claim.lua's parked lanes do.
if earliest then return {'wait', earliest} end
return {'idle'}

-- forget: ARGV = A_FORGET (params.rs: audit, step). Drops an ended audit's records: its sites that are done (a site still
-- running, a cancelled audit's leases out, keeps everything), and once none is left its seen set,
-- its host list, the slow mode its 429s put hosts in and its own result-cache entries. At most
-- `step` sites, then hosts, then cache keys a call: an audit of 100,000 sites took one call of
-- 1.7 s, during which Redis answered no other client. Returns {gone, progress}: gone 1 when
-- nothing of the audit is left, progress 1 when this call removed something (call again).
local audit, step = ARGV[A_FORGET.audit], tonumber(ARGV[A_FORGET.step])
local sites = redis.call('SRANDMEMBER', k_auditsites(audit), step)
local remaining, removed = 0, 0
-- A quarantined site (quarantine.lua) never ends: it goes with its lanes, its record and whatever of
-- it cannot be read; a lease of it still out finds nothing left when it comes back.
local function drop_lanes(site)
  local lanes = redis.pcall('SMEMBERS', k_sitelanes(site))
  if lanes.err then return end
  for _, lane in ipairs(lanes) do
    local host = redis.pcall('HGET', k_lane(lane), 'host')
    redis.call('ZREM', k_ready(), lane)
    redis.call('UNLINK', k_lane(lane), k_lq(lane), k_ld(lane), k_robots(lane), k_lexp(lane))
    if type(host) == 'string' then pcall(leave_host, lane, host) end
  end
end
for _, site in ipairs(sites) do
  local sk = k_site(site)
  local done = redis.pcall('HGET', sk, 'done')
  local bad = type(done) == 'table' or redis.pcall('HEXISTS', k_quarantine(), site) == 1
  if bad or done == '1' or redis.call('EXISTS', sk) == 0 then
    if bad then
      drop_lanes(site)
      redis.pcall('HDEL', k_quarantine(), site)
    end
    redis.call('UNLINK', sk, k_sitelanes(site), k_sbq(site))
    redis.call('SREM', k_auditsites(audit), site)
    removed = removed + 1
  else
    remaining = remaining + 1
  end
end
if remaining > 0 or #sites >= step then
  if removed > 0 then return {0, 1} end
  return {0, 0}
end
local hosts = redis.call('SPOP', k_ahosts(audit), step)
for _, host in ipairs(hosts) do
  if redis.call('SREM', k_hslow(host), audit) == 1 and not pcall(recompute, host) then
    repair_host(host, 0)
  end
end
if #hosts >= step then return {0, 1} end
local keys = redis.call('SPOP', k_acache(audit), step)
for _, key in ipairs(keys) do
  redis.call('UNLINK', k_cache(key))
end
if #keys >= step then return {0, 1} end
redis.call('UNLINK', k_seen(audit), k_auditsites(audit), k_ahosts(audit), k_acache(audit))
return {1, 1}

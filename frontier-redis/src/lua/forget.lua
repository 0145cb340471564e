-- forget: ARGV = audit. Drops an ended audit's records: its sites that are done (a site still
-- running, a cancelled audit's leases out, keeps everything), and once none is left its seen set,
-- its host list, the slow mode its 429s put hosts in and its own result-cache entries. Returns 1 when nothing of it is left.
local audit = ARGV[1]
local remaining = 0
for _, site in ipairs(redis.call('SMEMBERS', k_auditsites(audit))) do
  if redis.call('HGET', k_site(site), 'done') == '1' or redis.call('EXISTS', k_site(site)) == 0 then
    redis.call('UNLINK', k_site(site), k_sitelanes(site), k_sbq(site))
    redis.call('SREM', k_auditsites(audit), site)
  else
    remaining = remaining + 1
  end
end
if remaining > 0 then return 0 end
for _, host in ipairs(redis.call('SMEMBERS', k_ahosts(audit))) do
  if redis.call('SREM', k_hslow(host), audit) == 1 then recompute(host) end
end
for _, key in ipairs(redis.call('SMEMBERS', k_acache(audit))) do
  redis.call('UNLINK', k_cache(key))
end
redis.call('UNLINK', k_seen(audit), k_auditsites(audit), k_ahosts(audit), k_acache(audit))
return 1

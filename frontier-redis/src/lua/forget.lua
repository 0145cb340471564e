-- forget: ARGV = audit. Drops a finished audit's seen set and the records of its sites that are
-- done (a site still running keeps everything). Returns how many sites were dropped.
local audit = ARGV[1]
local dropped = 0
local remaining = 0
for _, site in ipairs(redis.call('SMEMBERS', k_auditsites(audit))) do
  if redis.call('HGET', k_site(site), 'done') == '1' then
    redis.call('UNLINK', k_site(site), k_sitelanes(site))
    redis.call('SREM', k_auditsites(audit), site)
    dropped = dropped + 1
  else
    remaining = remaining + 1
  end
end
if remaining == 0 then
  redis.call('UNLINK', k_seen(audit), k_auditsites(audit))
end
return dropped

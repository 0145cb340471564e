-- cancel: ARGV = audit. Drops every queued task of the audit's sites; leased ones finish and
-- discover nothing more.
local audit = ARGV[1]
for _, site in ipairs(redis.call('SMEMBERS', k_auditsites(audit))) do
  local sk = k_site(site)
  redis.call('HSET', sk, 'cancelled', '1')
  local dropped = bdrop(site)
  for _, lane in ipairs(redis.call('SMEMBERS', k_sitelanes(site))) do
    dropped = dropped + drop_lane(lane)
  end
  redis.call('HINCRBY', sk, 'queued', 0 - dropped) -- not -dropped: Lua prints -0
  check_done(site)
end
return {'ok'}

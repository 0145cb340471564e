-- cancel: ARGV = A_CANCEL (params.rs: audit, cursor, step, now: ms, for a quarantine's record). Drops every queued task of the audit's sites; leased ones
-- finish and discover nothing more. One call handles about `step` sites from an SSCAN cursor
-- (start at '0') and answers the next cursor, '0' when every site has been seen: a 100,000-site
-- audit cancelled in one call held Redis for 1.4 s, answering no other client. Cancelling a site
-- twice changes nothing, so a site SSCAN returns twice costs only the time.
local audit, cursor, step = ARGV[A_CANCEL.audit], ARGV[A_CANCEL.cursor], ARGV[A_CANCEL.step]
local page = redis.call('SSCAN', k_auditsites(audit), cursor, 'COUNT', step)
-- A site whose state cannot be read is quarantined instead (quarantine.lua): forget drops it.
local now = tonumber(ARGV[A_CANCEL.now]) or 0
local function one(site)
  local sk = k_site(site)
  redis.call('HSET', sk, 'cancelled', '1')
  local dropped = bdrop(site)
  for _, lane in ipairs(redis.call('SMEMBERS', k_sitelanes(site))) do
    dropped = dropped + drop_lane(lane)
  end
  redis.call('HINCRBY', sk, 'queued', 0 - dropped) -- not -dropped: Lua prints -0
  check_done(site)
end
for _, site in ipairs(page[2]) do
  local ok, err = pcall(one, site)
  if not ok then blame(site, nil, nil, err, now) end
end
return page[1]

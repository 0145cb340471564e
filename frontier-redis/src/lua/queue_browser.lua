-- queue_browser: ARGV = site, n, then n x (host, task_blob), then now (ms; for a quarantine's record).
-- Queues a site's browser tasks once its crawl ended (bphase 'a'), in lanes still open; a site not
-- waiting for them is left as it is. The site is done once they are (at once with none).
-- Under pcall: a site whose state cannot be read is quarantined (quarantine.lua), and the answer is
-- 'ok' all the same, so the coordinator's batch is acknowledged.
local site, n = ARGV[1], tonumber(ARGV[2])
local sk = k_site(site)
local function run()
local s = redis.call('HMGET', sk, 'done', 'cancelled', 'bphase')
if s[1] == '1' or s[2] == '1' or s[3] ~= 'a' then return end
redis.call('HSET', sk, 'bphase', 'q')
for i = 0, n - 1 do
  local lane = site .. '|' .. ARGV[3 + i * 2]
  local state = redis.call('HGET', k_lane(lane), 'robots')
  if state and state ~= 'c' then
    bpush(lane, site, ARGV[4 + i * 2], 0)
    redis.call('HINCRBY', sk, 'queued', 1)
  end
end
check_done(site)
end
local ok, err = pcall(run)
if not ok then blame(site, nil, nil, err, tonumber(ARGV[3 + n * 2]) or 0) end
return {'ok'}

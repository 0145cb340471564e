-- queue_browser: ARGV = site, n, then n x (host, task_blob).
-- Queues a site's browser tasks once its crawl ended (bphase 'a'), in lanes still open; a site not
-- waiting for them is left as it is. The site is done once they are (at once with none).
local site, n = ARGV[1], tonumber(ARGV[2])
local sk = k_site(site)
local s = redis.call('HMGET', sk, 'done', 'cancelled', 'bphase')
if s[1] == '1' or s[2] == '1' or s[3] ~= 'a' then return {'ok'} end
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
return {'ok'}

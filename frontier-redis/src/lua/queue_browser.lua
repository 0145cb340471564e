-- queue_browser: ARGV = A_QUEUE_BROWSER (params.rs: site, n, round: 'r' when the tasks are a round of
-- the rendered crawl, after which the site publishes its crawl's end again; '' else), then n x A_BROWSER_TASK (host, blob, render: '1' | '0'), then
-- A_TAIL_NOW (now, ms: for a quarantine's record).
-- Queues a site's browser tasks once its crawl ended (bphase 'a'), in lanes still open; a site not
-- waiting for them is left as it is. The site is done once they are (at once with none).
-- Under pcall: a site whose state cannot be read is quarantined (quarantine.lua), and the answer is
-- 'ok' all the same, so the coordinator's batch is acknowledged.
local site, n = ARGV[A_QUEUE_BROWSER.site], tonumber(ARGV[A_QUEUE_BROWSER.n])
local sk = k_site(site)
local function run()
local s = redis.call('HMGET', sk, unpack(F_SITE_BROWSER))
if s[F_SITE_BROWSER.done] == '1' or s[F_SITE_BROWSER.cancelled] == '1' then return end
if s[F_SITE_BROWSER.bphase] ~= 'a' then return end
-- q: the site ends after these; r: a round of the rendered crawl, after which (and after the crawl of
-- what it found) check_done publishes the crawl's end again.
redis.call('HSET', sk, 'bphase', ARGV[A_QUEUE_BROWSER.round] == 'r' and 'r' or 'q')
for i = 0, n - 1 do
  local at = A_QUEUE_BROWSER_REST + i * A_BROWSER_TASK_SPAN
  local lane = site .. '|' .. ARGV[at + A_BROWSER_TASK.host]
  local state = redis.call('HGET', k_lane(lane), 'robots')
  if state and state ~= 'c' then
    bpush(lane, site, ARGV[at + A_BROWSER_TASK.blob], 0, ARGV[at + A_BROWSER_TASK.render])
    redis.call('HINCRBY', sk, 'queued', 1)
  end
end
check_done(site)
end
local ok, err = pcall(run)
local tail = A_QUEUE_BROWSER_REST + n * A_BROWSER_TASK_SPAN
if not ok then blame(site, nil, nil, err, tonumber(ARGV[tail + A_TAIL_NOW.now]) or 0) end
return {'ok'}

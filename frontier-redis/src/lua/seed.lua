-- seed: ARGV = A_SEED (params.rs: site, audit, max_pages, max_depth, max_resources, max_in_flight,
--   gap (ms), info, done_blob, lim_d, lim_p, lim_r, max_sitemaps, max_sitemap_bytes, lim_s, n_hosts,
--   initial_span), then n_hosts x A_SEED_HOST (host, robots: the robots.txt task's blob),
--   then the initial tasks, initial_span arguments in runs (offer_all, args.rs TaskRuns),
--   then A_SEED_TAIL (browser_phase: 1 | 0, crawl_done: the event's blob, now: ms, for a quarantine's record).
-- Returns {'ok'} | {'exists'}.
local site, audit = ARGV[A_SEED.site], ARGV[A_SEED.audit]
local sk = k_site(site)
if redis.call('EXISTS', sk) == 1 then return {'exists'} end
redis.call('HSET', sk, 'audit', audit, 'maxp', ARGV[A_SEED.max_pages], 'maxd', ARGV[A_SEED.max_depth],
  'maxr', ARGV[A_SEED.max_resources], 'queued', 0, 'leased', 0, 'pages', 0, 'res', 0, 'completed', 0,
  'done', 0, 'cancelled', 0, 'info', ARGV[A_SEED.info], 'doneblob', ARGV[A_SEED.done_blob],
  'lim_d', ARGV[A_SEED.lim_d], 'lim_p', ARGV[A_SEED.lim_p], 'lim_r', ARGV[A_SEED.lim_r],
  'pmax', ARGV[A_SEED.max_in_flight], 'pgap', ARGV[A_SEED.gap], 'maxsf', ARGV[A_SEED.max_sitemaps],
  'maxsb', ARGV[A_SEED.max_sitemap_bytes], 'lim_s', ARGV[A_SEED.lim_s], 'smf', 0, 'smb', 0)
redis.call('SADD', k_auditsites(audit), site)
-- The rest under pcall: a host of the site whose pace cannot be read quarantines the new site
-- (quarantine.lua) rather than failing the pipeline of seeds it came in, every other audit's with it.
local function run()
local nh, ni = tonumber(ARGV[A_SEED.n_hosts]), tonumber(ARGV[A_SEED.initial_span])
local runs = A_SEED_REST + nh * A_SEED_HOST_SPAN
local tail = runs + ni
local bp = ARGV[tail + A_SEED_TAIL.browser_phase]
if bp then redis.call('HSET', sk, 'bp', bp, 'cdblob', ARGV[tail + A_SEED_TAIL.crawl_done]) end
local max, gap = tonumber(ARGV[A_SEED.max_in_flight]), tonumber(ARGV[A_SEED.gap])
for i = 0, nh - 1 do
  local at = A_SEED_REST + i * A_SEED_HOST_SPAN
  open_lane(site, audit, ARGV[at + A_SEED_HOST.host], ARGV[at + A_SEED_HOST.robots], max, gap)
end
local touched = {}
offer_all(site, audit, runs, ni, 0, touched)
for lane, _ in pairs(touched) do schedule(lane, 0) end
for _, lane in ipairs(redis.call('SMEMBERS', k_sitelanes(site))) do schedule(lane, 0) end
end
local ok, err = pcall(run)
local tail = A_SEED_REST + tonumber(ARGV[A_SEED.n_hosts]) * A_SEED_HOST_SPAN + tonumber(ARGV[A_SEED.initial_span])
if not ok then blame(site, nil, nil, err, tonumber(ARGV[tail + A_SEED_TAIL.now]) or 0) end
return {'ok'}

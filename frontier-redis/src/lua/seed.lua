-- seed: ARGV = site, audit, max_pages, max_depth, max_resources, max_in_flight, gap_ms, info_blob,
--   done_blob, lim_d, lim_p, lim_r, max_sitemaps, max_sitemap_bytes, lim_s, n_hosts, initial_span,
--   then n_hosts x (host, robots_task_blob),
--   then the initial tasks, initial_span arguments in runs (offer_all, args.rs TaskRuns).
--   then browser_pages, crawl_done_blob, now (ms; for a quarantine's record).
-- Returns {'ok'} | {'exists'}.
local site, audit = ARGV[1], ARGV[2]
local sk = k_site(site)
if redis.call('EXISTS', sk) == 1 then return {'exists'} end
redis.call('HSET', sk, 'audit', audit, 'maxp', ARGV[3], 'maxd', ARGV[4], 'maxr', ARGV[5],
  'queued', 0, 'leased', 0, 'pages', 0, 'res', 0, 'completed', 0, 'done', 0, 'cancelled', 0,
  'info', ARGV[8], 'doneblob', ARGV[9], 'lim_d', ARGV[10], 'lim_p', ARGV[11], 'lim_r', ARGV[12],
  'pmax', ARGV[6], 'pgap', ARGV[7], 'maxsf', ARGV[13], 'maxsb', ARGV[14], 'lim_s', ARGV[15], 'smf', 0, 'smb', 0)
redis.call('SADD', k_auditsites(audit), site)
-- The rest under pcall: a host of the site whose pace cannot be read quarantines the new site
-- (quarantine.lua) rather than failing the pipeline of seeds it came in, every other audit's with it.
local function run()
local nh, ni, base = tonumber(ARGV[16]), tonumber(ARGV[17]), 18
local tail = base + nh * 2 + ni -- then: browser pages, the CrawlDone event blob
if ARGV[tail] then redis.call('HSET', sk, 'bp', ARGV[tail], 'cdblob', ARGV[tail + 1]) end
local max, gap = tonumber(ARGV[6]), tonumber(ARGV[7])
for i = 0, nh - 1 do
  open_lane(site, audit, ARGV[base + i * 2], ARGV[base + i * 2 + 1], max, gap)
end
local touched = {}
offer_all(site, audit, base + nh * 2, ni, 0, touched)
for lane, _ in pairs(touched) do schedule(lane, 0) end
for _, lane in ipairs(redis.call('SMEMBERS', k_sitelanes(site))) do schedule(lane, 0) end
end
local ok, err = pcall(run)
if not ok then blame(site, nil, nil, err, tonumber(ARGV[#ARGV]) or 0) end
return {'ok'}

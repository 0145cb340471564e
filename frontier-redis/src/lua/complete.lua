-- complete: ARGV = A_COMPLETE (params.rs: now, lease, resolved ('' | 'f' failed | the address),
--   resolved_ttl (ms, clamped), rate_limited, robots_state ('' | 'k' | 'c'), robots_blob, crawl_delay
--   (ms, ''), robots_fetched_at ('' = the lease's start), sitemap_bytes, requeue_blob (''),
--   requeue_is_robots, requeue_prio, requeue_not_before, discovered_span, n_events (1 with events, 0
--   without), ip_cap, and what the answer told about its server (issue 17): response_ms (''),
--   quota_gap_ms (''), hold_until (''), give_back ('' | the lease's gap_ms when nothing was sent
--   under it)); from A_COMPLETE_REST on:
--   the discovered tasks, discovered_span arguments in runs (offer_all, args.rs TaskRuns),
--   then, with events, all of them in one argument, each behind its length (stream.rs),
--   then A_FURTHER: n (how many further tasks the worker started), their outcomes (one letter each:
--   'd' done | 'r' requeue), their response_ms joined by ',' ('-' for none), and A_REQUEUE per 'r'
--   in order (blob, prio, not_before): what became of the lease's further tasks in order (see
--   grant), in three arguments and three per requeue rather than five per task; those past n were
--   not started and go back to their queue as they were.
-- Returns {'stale'} | {'ok', enqueued}. A change of a latency guard is published with the events
-- (fields `g` and `t`, see keys.rs), so the note for the report is as atomic as the change.
-- Runs under pcall: a completion whose lease, site, lane or host cannot be read quarantines the
-- site (quarantine.lua) and answers 'stale'; what it did not get to stays for reap.
local now = tonumber(ARGV[A_COMPLETE.now])
local function run()
local n, m = tonumber(ARGV[A_COMPLETE.discovered_span]), tonumber(ARGV[A_COMPLETE.n_events])
local base = A_COMPLETE_REST
local fb = base + n + m
-- Only the further tasks the worker did not start go back as they were: only their blobs are read.
local L = release(ARGV[A_COMPLETE.lease], now, tonumber(ARGV[A_COMPLETE.ip_cap]), true, num(ARGV[fb + A_FURTHER.n], 0) + 1)
if not L then return {'stale'} end
local lane, host, site, started = L.lane, L.host, L.site, num(L.started, nil)
local nf = math.min(num(ARGV[fb + A_FURTHER.n], 0), #L.more)
-- The response times of the answers, in their order: the leased task's, then the further ones'.
local samples, texts = {}, {}
local response_ms = ARGV[A_COMPLETE.response_ms]
if response_ms ~= '' then samples[1], texts[1] = tonumber(response_ms), response_ms end
if nf > 0 then
  local i = 0
  for ms in string.gmatch(ARGV[fb + A_FURTHER.times], '[^,]+') do
    i = i + 1
    if i > nf then break end
    if ms ~= '-' then
      samples[#samples + 1] = tonumber(ms)
      texts[#samples] = ms
    end
  end
end
samples.texts = texts
local notes, exists = nil, nil
if #samples > 0 or ARGV[A_COMPLETE.quota_gap_ms] ~= '' or ARGV[A_COMPLETE.hold_until] ~= '' then
  -- Before the lanes below are scheduled, so they see the host's new next start.
  local changes
  changes, exists = apply_signals(host, L.ip, now, samples, tonumber(ARGV[A_COMPLETE.quota_gap_ms]),
    tonumber(ARGV[A_COMPLETE.hold_until]), L.ipg, L.inf + 1, L.ipload or 1)
  if #changes > 0 then
    notes = {'t', L.blob}
    for _, c in ipairs(changes) do
      notes[#notes + 1] = 'g'
      notes[#notes + 1] = table.concat({c[1], c[2], c[3], c[4], now, c[5]}, ',')
    end
  end
end
local sk = k_site(site)
-- What offer_all reads of the site (whether it was cancelled: nothing below cancels it), its audit
-- and its counts, in one read (F_COMPLETE_SITE: F_OFFER's fields first, so the answer is
-- offer_all's too). The counts are written once, at the end: `leased` and `completed` as they are
-- then, `queued` by what it gained (open_lane adds to it too), and check_done is told them.
local sf = redis.call('HMGET', sk, unpack(F_COMPLETE_SITE))
local audit = sf[F_COMPLETE_SITE.audit]
local dq = 0
local hk = k_host(host)
-- Only a task whose leases expired before has a count to clear (written before the lease was).
if L.x then redis.call('HDEL', k_lexp(lane), L.blob) end
if exists == nil then exists = redis.call('EXISTS', hk) == 1 end
if exists and ARGV[A_COMPLETE.resolved] == 'f' then
  if redis.call('HGET', hk, 'ip') then
    redis.call('HSET', hk, 'ipx', now + MIN_ADDRESS_TTL)
  else
    -- No address, so the lease reached nobody: the gap it took is given back, and the host's other
    -- checks settle one after another without waiting out a gap each (as the embedded frontier).
    redis.call('HSET', hk, 'next', I(math.min(num(redis.call('HGET', hk, 'next'), 0), now)))
  end
elseif exists and ARGV[A_COMPLETE.resolved] ~= '' then
  redis.call('HSET', hk, 'ip', ARGV[A_COMPLETE.resolved], 'ipx', now + tonumber(ARGV[A_COMPLETE.resolved_ttl]))
end
if ARGV[A_COMPLETE.rate_limited] == '1' and exists and audit then
  redis.call('SADD', k_hslow(host), audit)
  local gape = recompute(host)
  if gape then
    redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), now + gape))
  end
end
local rstate = ARGV[A_COMPLETE.robots_state]
if rstate ~= '' and redis.call('EXISTS', k_lane(lane)) == 1 then
  redis.call('SET', k_robots(lane), ARGV[A_COMPLETE.robots_blob])
  local fetched = started
  if ARGV[A_COMPLETE.robots_fetched_at] ~= '' then fetched = tonumber(ARGV[A_COMPLETE.robots_fetched_at]) end
  redis.call('HSET', k_lane(lane), 'robots', rstate, 'rat', fetched)
  if rstate == 'c' then
    dq = dq - drop_lane(lane)
    leave_host(lane, host)
  elseif ARGV[A_COMPLETE.crawl_delay] ~= '' then
    local pgap = num(redis.call('HGET', k_lane(lane), 'pgap'), 0)
    redis.call('ZADD', k_hgap(host), math.max(pgap, tonumber(ARGV[A_COMPLETE.crawl_delay])), lane)
    local gape = recompute(host)
    if gape then
      redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), started + gape))
    end
  end
end
-- Nothing was sent under the lease (a cached answer, a copied robots.txt, ...): the gap its claim
-- took is given back when no start was given since (shared::pace::HostPace::give_back).
local give_back = ARGV[A_COMPLETE.give_back]
if give_back ~= '' and started and num(redis.call('HGET', hk, 'next'), 0) == started + tonumber(give_back) then
  redis.call('HSET', hk, 'next', I(started))
end
if tonumber(ARGV[A_COMPLETE.sitemap_bytes]) > 0 and audit then
  sf[F_OFFER.smb] = I(redis.call('HINCRBY', sk, 'smb', ARGV[A_COMPLETE.sitemap_bytes]))
end
-- A site gone meanwhile (its audit ended and was forgotten) takes nothing more.
local cancelled = sf[F_OFFER.cancelled] == '1' or not audit
-- The lane's state, read once for the requeue below and for its scheduling at the end.
local ls = redis.call('HMGET', k_lane(lane), unpack(F_LANE_STATE))
local lane_state = ls[F_LANE_STATE.robots]
local requeued, completed = 0, 0
local rq_blob, rq_robots = ARGV[A_COMPLETE.requeue_blob], ARGV[A_COMPLETE.requeue_is_robots]
if rq_blob ~= '' and not cancelled and lane_state and (lane_state ~= 'c' or rq_robots == '1') then
  if L.browser == '1' or L.browser == 'r' then
    bpush(lane, site, ARGV[A_COMPLETE.requeue_blob], ARGV[A_COMPLETE.requeue_not_before], L.browser == 'r' and '1' or '0')
  else
    local rq_nb = ARGV[A_COMPLETE.requeue_not_before]
    push(lane, rq_blob, rq_robots, ARGV[A_COMPLETE.requeue_prio], rq_nb, now)
    if rq_robots == '1' then ls[F_LANE_STATE.rt], ls[F_LANE_STATE.rtnb] = rq_blob, rq_nb end
  end
  requeued = 1
else
  completed = 1
end
-- The further tasks: done, queued again as the worker asks, or (not started) back as they were.
-- Nothing is queued again for a cancelled audit or a lane that ended.
local live = not cancelled and lane_state and lane_state ~= 'c'
local outcomes, r = ARGV[fb + A_FURTHER.outcomes], fb + A_FURTHER_SPAN
for i, t in ipairs(L.more) do
  local done = i <= nf and string.byte(outcomes, i) == 100 -- 'd'
  local rq = nil
  if not done and i <= nf then
    -- A requeue: its arguments (A_REQUEUE), in the order of the requeues.
    rq, r = r, r + A_REQUEUE_SPAN
  end
  if not live or done then
    completed = completed + 1
  else
    if i <= nf then
      push(lane, ARGV[rq + A_REQUEUE.blob], '0', ARGV[rq + A_REQUEUE.prio], ARGV[rq + A_REQUEUE.not_before], now)
    else
      push(lane, t[1], '0', t[2], '0', now)
    end
    requeued = requeued + 1
  end
end
dq = dq + requeued
local touched, enqueued, counts = {}, 0, {}
touched[lane] = true
if not cancelled then
  -- The site's fields as read above (only `smb` changed since, and is kept up to date), and
  -- this lane's state.
  enqueued = offer_all(site, audit, base, n, now, touched, sf, {[lane] = lane_state or false}, counts)
end
touched[lane] = nil
for t, _ in pairs(touched) do schedule(t, now) end
-- The lease's own lane: when every slot it freed on its IP went to a lane of an idle host and
-- other lanes still wait for the IP, it has had its turn and waits behind them instead of taking
-- a slot back.
local s = lane_state and lane_score(lane, now, {
  [F_LANE_SCORE.host] = host,
  [F_LANE_SCORE.robots] = lane_state,
  [F_LANE_SCORE.rt] = ls[F_LANE_STATE.rt],
  [F_LANE_SCORE.rtnb] = ls[F_LANE_STATE.rtnb],
})
if not s then
  redis.call('ZREM', k_ready(), lane)
elseif s <= now and L.fair and redis.call('EXISTS', k_ipq(L.ip)) == 1 then
  redis.call('ZREM', k_ready(), lane)
  park_ip(L.ip, lane, L.inf)
else
  redis.call('ZADD', k_ready(), I(s), lane)
end
-- The events: one packed argument, or none (m is 1 or 0).
publish_all(m > 0 and ARGV[base + n] or '', notes)
if audit then
  local leased = num(sf[F_COMPLETE_SITE.leased], 0) - 1 - #L.more
  local f = {'leased', I(leased), 'completed', I(num(sf[F_COMPLETE_SITE.completed], 0) + completed)}
  if counts.pages then
    f[5], f[6], f[7], f[8], f[9], f[10] = 'pages', I(counts.pages), 'res', I(counts.res), 'smf', I(counts.smf)
    dq = dq + counts.queued
  end
  redis.call('HSET', sk, unpack(f))
  local queued = redis.call('HINCRBY', sk, 'queued', I(dq))
  check_done(site, {
    [F_SITE_DONE.queued] = queued,
    [F_SITE_DONE.leased] = leased,
    [F_SITE_DONE.done] = sf[F_OFFER.done],
    [F_SITE_DONE.bp] = sf[F_COMPLETE_SITE.bp],
    [F_SITE_DONE.bphase] = sf[F_COMPLETE_SITE.bphase],
    [F_SITE_DONE.cancelled] = sf[F_OFFER.cancelled],
  })
elseif redis.call('EXISTS', sk) == 1 then
  check_done(site)
end
return {'ok', enqueued}
end
UNIT.site, UNIT.lane = nil, nil
local ok, answer = pcall(run)
if ok then return answer end
local schema = schema_error(answer)
if schema then return schema end
blame(UNIT.site, UNIT.lane, ARGV[A_COMPLETE.lease], answer, now)
return {'stale'}

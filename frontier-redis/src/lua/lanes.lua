-- Lanes: their queues, when each is due, `ready`, parking and waking on a full host or IP, opening
-- and ending lanes and sites. Loaded after pace.lua (scripts.rs, SHARED).

local function promote(lane, now)
  local due = redis.call('ZRANGEBYSCORE', k_ld(lane), '-inf', now)
  for _, m in ipairs(due) do
    redis.call('ZREM', k_ld(lane), m)
    local seq = bump(k_seq(), 1, 0)
    redis.call('ZADD', k_lq(lane), tonumber(string.sub(m, 1, 1)) * PRIO + seq, string.sub(m, 2))
  end
end

-- When a lane's next task is due as far as the lane itself goes (its robots state `robots` and, while
-- that is 'p', its robots.txt task `rt` due at `rtnb`); nil when it has nothing to claim.
local function lane_due(lane, robots, rt, rtnb, queued)
  if robots == 'c' then return nil end
  if robots == 'p' then
    if not rt then return nil end
    return num_or(rtnb, 0)
  end
  -- `queued`: whether its ready queue has a task, when the caller knows (nil: look).
  if queued == nil then queued = redis.call('ZCARD', k_lq(lane)) > 0 end
  if queued then return 0 end
  local d = redis.call('ZRANGE', k_ld(lane), '0', '0', 'WITHSCORES')
  if #d == 0 then return nil end
  return tonumber(d[2])
end

-- When the lane's next task could start as far as the lane and its host's clock go (in-flight caps
-- are checked by claim, which parks the lane); nil when it has nothing to claim. `l`: the lane's
-- host, robots, rt and rtnb when the caller has read them.
local function lane_score(lane, now, l)
  l = l or redis.call('HMGET', k_lane(lane), unpack(F_LANE_SCORE))
  if not l[F_LANE_SCORE.host] then return nil end
  local due = lane_due(lane, l[F_LANE_SCORE.robots], l[F_LANE_SCORE.rt], l[F_LANE_SCORE.rtnb])
  if not due then return nil end
  return math.max(due, num_or(redis.call('HGET', k_host(l[F_LANE_SCORE.host]), 'next'), 0))
end

-- Puts the lane into `ready` at its score, or takes it out when it has nothing to claim. Returns
-- whether it has something.
local function schedule(lane, now)
  local s = lane_score(lane, now)
  if s then
    redis.call('ZADD', k_ready(), I(s), lane)
  else
    redis.call('ZREM', k_ready(), lane)
  end
  return s ~= nil
end

-- Schedules again up to `room` lanes parked in `set` (that many slots of its host or IP are free).
-- Not every parked lane: hundreds of hosts on one shared server at its IP cap would otherwise be
-- rescheduled by every completion and parked again by the next claims.
local function wake(set, now, room)
  if room <= 0 then return end
  local lanes = redis.call('SPOP', set, room)
  for _, lane in ipairs(lanes) do schedule(lane, now) end
end

-- Lanes waiting for a slot of a server IP are kept in a sorted set (`ipq`), those of hosts with
-- nothing in flight first (scored by the order they were parked in), then those of hosts already
-- being fetched (BUSY later): a freed slot of the IP goes to a site that has nothing in flight
-- before a second request of one that has, so sites on one server take turns, as on the embedded
-- frontier.
local BUSY = 10000000000000 -- 1e13: after any sequence number

local function park_ip(ip, lane, inf)
  -- The sequence, not the time: lanes parked within one millisecond keep their order too.
  local s = bump(k_seq(), 1, 0)
  if inf > 0 then s = s + BUSY end
  redis.call('ZADD', k_ipq(ip), I(s), lane)
end

-- Schedules up to `room` lanes parked on the IP, first in first out, those of idle hosts first.
-- Entries of lanes that ended do not count. Lanes an earlier version parked in the set `ipwait`
-- are taken after them, so a rolling upgrade strands none. Returns whether every slot went to a
-- lane of a host with nothing in flight (such a lane can take it; one of a host being fetched may
-- find its host full).
local function wake_ip(ip, now, room)
  if room <= 0 then return false end
  local woken, idle, key = 0, 0, k_ipq(ip)
  while woken < room do
    local c = redis.call('ZPOPMIN', key, I(room - woken))
    if #c == 0 then break end
    for i = 1, #c, 2 do
      if schedule(c[i], now) then
        woken = woken + 1
        if tonumber(c[i + 1]) < BUSY then idle = idle + 1 end
      end
    end
  end
  if woken < room then wake(k_ipwait(ip), now, room - woken) end
  return idle >= room
end

-- A lane taken out of `ready` unclaimed (its tasks dropped, its site ended) may hold the turn a
-- completion's own lane gave way for (complete.lua): the turn passes to the next lane waiting for
-- its IP, so no slot stays free with lanes parked behind it.
local function hand_on(lane)
  local host = redis.call('HGET', k_lane(lane), 'host')
  if not host then return end
  local ip = redis.call('HGET', k_host(host), 'ip')
  if ip then wake_ip(ip, 0, 1) end
end

-- Where a task of a lane is queued: its delayed set until `not_before` (a number), or its ready
-- queue in order of priority and then `seq` (taken from the counter when the caller has none
-- reserved). Returns the key, the score and the member.
local function queue_entry(lane, blob, prio, not_before, now, seq)
  if not_before > now then return k_ld(lane), I(not_before), tostring(prio) .. blob end
  seq = seq or bump(k_seq(), 1, 0)
  return k_lq(lane), I(tonumber(prio) * PRIO + seq), blob
end

-- Queues one task in its lane (see queue_entry).
local function push(lane, blob, is_robots, prio, not_before, now, seq)
  not_before = tonumber(not_before)
  if is_robots == '1' then
    redis.call('HSET', k_lane(lane), 'rt', blob, 'rtnb', not_before)
  else
    local k, score, member = queue_entry(lane, blob, prio, not_before, now, seq)
    redis.call('ZADD', k, score, member)
  end
end

-- Empties a lane's queues; returns how many tasks were dropped.
local function drop_lane(lane)
  local n = redis.call('ZCARD', k_lq(lane)) + redis.call('ZCARD', k_ld(lane))
  n = n + redis.call('HDEL', k_lane(lane), 'rt', 'rtnb')
  redis.call('DEL', k_lq(lane), k_ld(lane))
  if redis.call('ZREM', k_ready(), lane) == 1 then hand_on(lane) end
  return n
end

-- Queues a browser task (`--browser-pages`, `--render`) of a lane: only claim_browser reads them.
-- `render`: '1' for a render of the rendered crawl (its page loads are PAGE_LOAD_GAP.r apart).
local function bpush(lane, site, blob, not_before, render)
  local id = bump(k_seq(), 1, 0)
  redis.call('HSET', k_btask(id), 'lane', lane, 'site', site, 'blob', blob, 'nb', not_before, 'render', render)
  redis.call('ZADD', k_bq(), id, id)
  redis.call('SADD', k_sbq(site), id)
end

-- Drops a site's waiting browser tasks; returns how many.
local function bdrop(site)
  local ids = redis.call('SMEMBERS', k_sbq(site))
  for _, id in ipairs(ids) do
    redis.call('ZREM', k_bq(), id)
    redis.call('DEL', k_btask(id))
  end
  redis.call('DEL', k_sbq(site))
  return #ids
end

-- `known` (may be nil): the site's queued, leased, done, bp, bphase and cancelled, when the caller
-- has them.
local function check_done(site, known)
  local sk = k_site(site)
  local s = known or redis.call('HMGET', sk, unpack(F_SITE_DONE))
  if s[F_SITE_DONE.done] == '1' then return end
  if num(s[F_SITE_DONE.queued], 0) > 0 or num(s[F_SITE_DONE.leased], 0) > 0 then return end
  -- A browser phase (browser pages, the rendered crawl): the crawl's end is published (the
  -- coordinator queues the pages), and the site waits for them (bphase: a awaiting, q queued, r a
  -- round of the rendered crawl queued: once it and the crawl of what it found are over, the
  -- crawl's end is published again).
  if num(s[F_SITE_DONE.bp], 0) > 0 and s[F_SITE_DONE.cancelled] ~= '1' and s[F_SITE_DONE.bphase] ~= 'q' then
    local phase = s[F_SITE_DONE.bphase]
    if not phase or phase == 'r' then
      redis.call('HSET', sk, 'bphase', 'a')
      publish(redis.call('HGET', sk, 'cdblob'))
    end
    return
  end
  redis.call('HSET', sk, 'done', '1')
  publish(redis.call('HGET', sk, 'doneblob'))
  for _, lane in ipairs(redis.call('SMEMBERS', k_sitelanes(site))) do
    local host = redis.call('HGET', k_lane(lane), 'host')
    if redis.call('ZREM', k_ready(), lane) == 1 then hand_on(lane) end
    redis.call('DEL', k_lane(lane), k_lq(lane), k_ld(lane), k_robots(lane), k_lexp(lane))
    if host then leave_host(lane, host) end
  end
  redis.call('DEL', k_sitelanes(site))
end

-- Creates a lane with its robots.txt task queued (the template it is queued again from when its
-- rules are a day old) and joins it to its host.
local function open_lane(site, audit, host, rt, pmax, pgap)
  local lane = site .. '|' .. host
  redis.call('HSET', k_lane(lane), 'host', host, 'site', site, 'robots', 'p', 'rt', rt, 'rtnb', 0, 'rtpl', rt,
    'pgap', pgap)
  redis.call('SADD', k_sitelanes(site), lane)
  redis.call('HINCRBY', k_site(site), 'queued', 1)
  join_host(lane, host, audit, pmax, pgap)
  return lane
end

-- Creates a lane whose tasks are no HTTP requests: its robots state is known from the start
-- (`robots_blob`, an rmp LaneRobots) and never read again, and it joins its host's pace.
local function open_known_lane(site, audit, host, robots_blob, pmax, pgap, now)
  local lane = site .. '|' .. host
  redis.call('HSET', k_lane(lane), 'host', host, 'site', site, 'robots', 'k', 'rat', now, 'pgap', pgap)
  redis.call('SET', k_robots(lane), robots_blob)
  redis.call('SADD', k_sitelanes(site), lane)
  join_host(lane, host, audit, pmax, pgap)
  return lane
end

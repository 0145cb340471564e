-- Shared functions of Shoal's frontier scripts (prepended after the generated key builders).
-- Times are milliseconds passed in by the caller; scripts never read Redis' clock (a host that no
-- live lane uses expires at an absolute time, PEXPIREAT, in the same clock).

local PRIO = 1099511627776 -- 2^40: ready-queue score = priority * PRIO + sequence

-- A stored number of the step's own unit of work (its lane, site, lease, host): `d` when the field
-- is missing, and an error when it holds anything but a number. A value that cannot be read is
-- never guessed at: the step's unit is quarantined instead (see "Quarantine" below).
local function num(v, d)
  if v then
    local n = tonumber(v)
    if n == nil then error('a stored value is not a number: ' .. string.sub(tostring(v), 1, 24), 0) end
    return n
  end
  return d
end

-- The unit of work a step is on, for its quarantine when it fails (set as soon as it is known:
-- `site` and `lane`; each step that catches errors clears it first).
local UNIT = {}

-- A stored number read about someone else's unit (a lane being woken, another host's clock):
-- `d` when missing or unreadable. The lane's own claim reads it with `num` and quarantines it.
local function num_or(v, d)
  return v and tonumber(v) or d
end

-- An integer as the string Redis gets anyway. A Lua number passed to redis.call is formatted
-- with %.17g (glibc's multiprecision float printing); %d is several times cheaper: measured with
-- redis-benchmark on Redis 7.0, an HSET of a millisecond time cost 0.69 us as a number, 0.55 us
-- through I, 0.38 us as a literal string. Only for values that are always whole numbers.
local function I(n)
  return string.format('%d', n)
end

-- The namespace's epoch: when its state began (the first claim that found none). What a client
-- remembers of what Redis holds (sent.rs) is good within one epoch only: an emptied Redis (a
-- FLUSHALL, a restart without persistence) starts a new one, and every lease carries it.
local function epoch(now)
  local e = redis.call('GET', k_epoch())
  if not e then
    e = I(now)
    redis.call('SET', k_epoch(), e)
  end
  return e
end

-- Adds `by` to a deployment-wide counter (`seq`, `leaseid`, `ipf:{ip}`) and returns it. Such a
-- counter belongs to no audit, so one that cannot be read is set to `reset` first (a sequence may
-- restart, a lease id must not: the caller passes a value above any id given out), never blamed
-- on the unit that reads it.
local function bump(key, by, reset)
  local n = redis.pcall('INCRBY', key, by)
  if type(n) == 'table' then
    redis.log(redis.LOG_WARNING, 'shoal: reset unreadable counter ' .. key)
    redis.call('SET', key, I(reset))
    n = redis.call('INCRBY', key, by)
  end
  return n
end

-- Adds `by` to worker `w`'s count of leases (`wl`, fair shares only): an unreadable count restarts.
local function bump_worker(w, by)
  local n = redis.pcall('HINCRBY', k_wl(), w, by)
  if type(n) == 'table' then
    if type(redis.pcall('HDEL', k_wl(), w)) == 'table' then redis.call('DEL', k_wl()) end
    n = redis.call('HINCRBY', k_wl(), w, by)
  end
  return n
end

local function publish(blob)
  if blob and blob ~= '' then
    redis.call('XADD', k_events(), '*', 'e', blob)
  end
end

-- Publishes a completion's events as one stream entry: `blob` holds them all, each behind its
-- length (the client packs them, stream.rs; field `E`), so the script handles one string however
-- many pages a batch brought instead of one Lua string and two XADD arguments per event. `extra`
-- (field/value pairs, may be nil) goes into the same entry, which is written even without events.
local function publish_all(blob, extra)
  local fields = extra or {}
  if blob ~= '' then
    fields[#fields + 1] = 'E'
    fields[#fields + 1] = blob
  end
  if #fields > 0 then redis.call('XADD', k_events(), '*', unpack(fields)) end
end

-- The in-flight cap and gap with the latency guard's level applied, mirroring
-- shoal_shared::latency::guarded: the cap halved per level (at least 1), the gap doubled per level
-- from at least GUARD_FLOOR_GAP (at most MAX_GAP, never lowered).
local function guarded(maxe, gape, level)
  if level <= 0 then return maxe, gape end
  local f = 2 ^ math.min(level, GUARD_MAX_LEVEL)
  return math.max(1, math.floor(maxe / f)), math.max(gape, math.min(math.max(gape, GUARD_FLOOR_GAP) * f, MAX_GAP))
end

-- A server IP's guard: its level and the earliest next start to it (0, 0 without an address).
local function ip_pace(ip)
  if not ip or ip == '' then return 0, 0 end
  local g = redis.pcall('HMGET', k_ipg(ip), 'll', 'next')
  if g.err then g = {'-', false} end
  local ll, nx = num_or(g[1], nil), num_or(g[2], nil)
  if (g[1] and not ll) or (g[2] and not nx) then
    -- A server IP's guard is every host's at the address, no audit's: reset, never blamed.
    redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable latency guard of IP ' .. ip)
    redis.call('DEL', k_ipg(ip))
  end
  return ll or 0, nx or 0
end

-- Requests in flight to a server IP (shared by every host at the address: an unreadable count is
-- reset, never blamed on the lane that reads it).
local function ip_inflight(ip)
  local v = redis.pcall('GET', k_ipf(ip))
  if type(v) == 'table' then v = '-' end
  local n = num_or(v, nil)
  if v and not n then
    redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable in-flight count of IP ' .. ip)
    redis.call('DEL', k_ipf(ip))
  end
  return n or 0
end

-- The limits in force from what the host's live lanes ask and whether a live audit saw a 429 on
-- it, mirroring shoal_shared::pace::HostPace::combine: fewest in flight (hmax), longest gap
-- including Crawl-delay (hgap), slow mode while hslow has an audit, then a stated quota's gap (qg)
-- and the latency guard's level (ll, see apply_signals below). A host no lane and no slow
-- audit uses keeps only its clock, until HOST_LINGER after its next allowed start. Returns the gap
-- in force, or nil for an unused host.
local function recompute(host)
  local hk = k_host(host)
  local m = redis.call('ZRANGE', k_hmax(host), 0, 0, 'WITHSCORES')
  local slow = redis.call('SCARD', k_hslow(host)) > 0
  if #m == 0 then
    if not slow and redis.call('EXISTS', hk) == 1 then
      redis.call('PEXPIREAT', hk, num(redis.call('HGET', hk, 'next'), 0) + LINGER)
      redis.call('DEL', k_hostwait(host))
    end
    return nil
  end
  redis.call('PERSIST', hk)
  local g = redis.call('ZRANGE', k_hgap(host), -1, -1, 'WITHSCORES')
  local maxe, gape = tonumber(m[2]), num(g[2], 0)
  local sig = redis.call('HMGET', hk, 'qg', 'll')
  gape = math.max(gape, num(sig[1], 0))
  if slow then
    maxe = SLOW_MAX_IN_FLIGHT
    gape = math.max(gape, SLOW_GAP)
  end
  maxe, gape = guarded(maxe, gape, num(sig[2], 0))
  redis.call('HSET', hk, 'maxe', maxe, 'gape', gape)
  return gape
end

-- A lane starts using its host: its audit's limits count in the host's pace, and an audit new to
-- the host has the host's address looked up again before its first request.
local function join_host(lane, host, audit, pmax, pgap)
  local hk = k_host(host)
  if redis.call('EXISTS', hk) == 0 then
    redis.call('HSET', hk, 'inf', 0, 'next', 0)
  end
  redis.call('ZADD', k_hmax(host), pmax, lane)
  redis.call('ZADD', k_hgap(host), pgap, lane)
  if redis.call('SADD', k_ahosts(audit), host) == 1 then
    redis.call('HDEL', hk, 'ipx')
  end
  recompute(host)
end

-- A lane ends (its site is done, or its robots.txt closed it): it asks nothing of the host.
local function leave_host(lane, host)
  redis.call('ZREM', k_hmax(host), lane)
  redis.call('ZREM', k_hgap(host), lane)
  recompute(host)
end

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
  l = l or redis.call('HMGET', k_lane(lane), 'host', 'robots', 'rt', 'rtnb')
  if not l[1] then return nil end
  local due = lane_due(lane, l[2], l[3], l[4])
  if not due then return nil end
  return math.max(due, num_or(redis.call('HGET', k_host(l[1]), 'next'), 0))
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

-- Queues a browser task (`--browser-pages`) of a lane: only claim_browser reads them.
local function bpush(lane, site, blob, not_before)
  local id = bump(k_seq(), 1, 0)
  redis.call('HSET', k_btask(id), 'lane', lane, 'site', site, 'blob', blob, 'nb', not_before)
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
  local s = known or redis.call('HMGET', sk, 'queued', 'leased', 'done', 'bp', 'bphase', 'cancelled')
  if s[3] == '1' or num(s[1], 0) > 0 or num(s[2], 0) > 0 then return end
  -- Browser pages asked for: the crawl's end is published (the coordinator queues them), and the
  -- site waits for them (bphase: a awaiting, q queued).
  if num(s[4], 0) > 0 and s[6] ~= '1' and s[5] ~= 'q' then
    if not s[5] then
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

-- The members of `set` among `list` (chunked: Lua's unpack has a stack limit), as a table fp -> true.
local function members_of(set, list)
  local found = {}
  for from = 1, #list, 500 do
    local chunk = list
    if #list > 500 then
      chunk = {}
      for i = from, math.min(from + 499, #list) do chunk[#chunk + 1] = list[i] end
    end
    local flags = redis.call('SMISMEMBER', set, unpack(chunk))
    for i, f in ipairs(flags) do
      if f == 1 then found[chunk[i]] = true end
    end
  end
  return found
end

local function add_all(set, list)
  for from = 1, #list, 500 do
    local chunk = {}
    for i = from, math.min(from + 499, #list) do chunk[#chunk + 1] = list[i] end
    redis.call('SADD', set, unpack(chunk))
  end
end

-- The budget a new task of `kind` (args.rs, kind_code: p page, r resource, x external check,
-- s sitemap) at link `depth` is over, given the site's counts and limits: 'd' depth, 'p' pages,
-- 'r' resource checks, 's' sitemaps; nil when it may be queued. Mirrors
-- shoal_shared::frontier::budget::over_budget (the differential test holds them together).
local function over_budget(kind, depth, pages, res, smf, smb, maxp, maxd, maxr, maxsf, maxsb)
  if kind == 'p' then
    if depth > maxd then return 'd' end
    if pages >= maxp then return 'p' end
  elseif kind == 'r' or kind == 'x' then
    if res >= maxr then return 'r' end
  elseif kind == 's' then
    if smf >= maxsf or smb >= maxsb or pages >= maxp then return 's' end
  end
  return nil
end

-- Queues the discovered tasks of ARGV from position `base`, `span` arguments in runs (args.rs,
-- TaskRuns): a run's head (host, kind, depth, prio, nb, rblob, how many tasks), then per task its
-- seen keys and blob (fp, fp2, blob), of a site whose lanes are open, whose URLs are new to the audit (seen key `fp` not taken, nor `fp2`: a
-- resource check is kept out by the URL's page key) and within the budgets, in order; mirrors the
-- embedded frontier's offer. The site's hash, each lane's state and the seen set are read once
-- for the whole batch and written once, so a page's fifty links cost a handful of commands, not
-- fifty times as many. Budget overruns publish the site's pre-encoded limit finding once. Records
-- the lanes it queued into in `touched`; returns how many were queued. `s` (may be nil): the site's
-- fields of OFFER_FIELDS, when the caller read them with its own; `states` (may be nil): lanes
-- whose robots state the caller knows (false: no such lane); `counts` (may be nil): a table that
-- gets the site's new `pages`, `res`, `smf` and the `queued` it added, for the caller to write
-- with its own counts (nothing else here writes them but open_lane, which adds to `queued`).
local OFFER_FIELDS = {'cancelled', 'done', 'maxp', 'maxd', 'maxr', 'pages', 'res', 'pmax', 'pgap', 'maxsf', 'maxsb',
  'smf', 'smb'}
-- What a completion reads of its site in one step: its audit, OFFER_FIELDS (from index 2), then
-- its counts and browser phase (from index 15: queued, leased, completed, bp, bphase).
local COMPLETE_SITE_FIELDS = {'audit'}
for i = 1, #OFFER_FIELDS do COMPLETE_SITE_FIELDS[i + 1] = OFFER_FIELDS[i] end
COMPLETE_SITE_FIELDS[15], COMPLETE_SITE_FIELDS[16], COMPLETE_SITE_FIELDS[17] = 'queued', 'leased', 'completed'
COMPLETE_SITE_FIELDS[18], COMPLETE_SITE_FIELDS[19] = 'bp', 'bphase'
local function offer_all(site, audit, base, span, now, touched, s, states, counts)
  if span == 0 then return 0 end
  local sk = k_site(site)
  s = s or redis.call('HMGET', sk, unpack(OFFER_FIELDS))
  if s[1] == '1' or s[2] == '1' then return 0 end
  local maxp, maxd, maxr = num(s[3], nil), num(s[4], nil), num(s[5], nil)
  local pages, res, smf, smb = num(s[6], 0), num(s[7], 0), num(s[12], 0), num(s[13], 0)
  local maxsf, maxsb = num(s[10], DEFAULT_MAX_SITEMAPS), num(s[11], DEFAULT_MAX_SITEMAP_BYTES)
  -- Each task is read where it is in ARGV (`open`: its first argument), not copied into a table;
  -- its run's head once per run (`heads`: kind, depth, prio, nb and lane, per task).
  local open, heads = {}, {}
  states = states or {}
  local j, last = base, base + span
  while j < last do
    local host, rblob, cnt = ARGV[j], ARGV[j + 5], tonumber(ARGV[j + 6])
    local lane = site .. '|' .. host
    local robots = states[lane]
    if robots == nil then
      robots = redis.call('HGET', k_lane(lane), 'robots') or false
      if not robots and string.sub(rblob, 1, 1) == '-' then
        -- A check that is no HTTP request (DNS, a mail server): its lane opens with its robots
        -- state known (the rest of rblob), under the host's one pace.
        open_known_lane(site, audit, host, string.sub(rblob, 2), num(s[8], DEFAULT_IN_FLIGHT),
          num(s[9], DEFAULT_GAP), now)
        robots = 'k'
        touched[lane] = true
      elseif not robots and rblob ~= '' then
        -- The first link of the site to this other host (or a check of it): open its lane,
        -- robots.txt first, under the host's one pace (the stricter of everyone's limits).
        open_lane(site, audit, host, rblob, num(s[8], DEFAULT_IN_FLIGHT), num(s[9], DEFAULT_GAP))
        robots = 'p'
        touched[lane] = true
      end
      states[lane] = robots
    end
    if robots and robots ~= 'c' then
      local head = {kind = ARGV[j + 1], depth = tonumber(ARGV[j + 2]), prio = tonumber(ARGV[j + 3]),
        nb = tonumber(ARGV[j + 4]), lane = lane}
      for k = j + 7, j + 4 + cnt * 3, 3 do
        open[#open + 1] = k
        heads[#open] = head
      end
    end
    j = j + 7 + cnt * 3
  end
  local keys = {}
  for _, k in ipairs(open) do
    keys[#keys + 1] = ARGV[k]
    if ARGV[k + 1] ~= '' then keys[#keys + 1] = ARGV[k + 1] end
  end
  local seen = k_seen(audit)
  local known = members_of(seen, keys)
  local added, over, queued, n = {}, {}, 0, 0
  -- Queue key -> its new {score, member, ...}, and the queues in the order first used.
  local adds, order, ready = {}, {}, {}
  local seq = bump(k_seq(), I(#open), 0) - #open
  for o, j in ipairs(open) do
    local h = heads[o]
    local fp, fp2, kind = ARGV[j], ARGV[j + 1], h.kind
    if not (known[fp] or (fp2 ~= '' and known[fp2])) then
      local code = over_budget(kind, h.depth, pages, res, smf, smb, maxp, maxd, maxr, maxsf, maxsb)
      if code then
        over[code] = true
      else
        known[fp] = true
        added[#added + 1] = fp
        if kind == 'p' then
          pages = pages + 1
        elseif kind == 'r' or kind == 'x' then
          res = res + 1
        elseif kind == 's' then
          smf = smf + 1
        end
        seq = seq + 1
        -- Gathered per queue, so each gets one ZADD below (a lane's ready queue's key made once).
        local lane, nb, q, score, member = h.lane, h.nb, nil, nil, nil
        if nb > now then
          q, score, member = queue_entry(lane, ARGV[j + 2], h.prio, nb, now, seq)
        else
          q = ready[lane]
          if not q then
            q = k_lq(lane)
            ready[lane] = q
          end
          score, member = I(h.prio * PRIO + seq), ARGV[j + 2]
        end
        local pairs_of = adds[q]
        if not pairs_of then
          pairs_of = {}
          adds[q] = pairs_of
          order[#order + 1] = q
        end
        pairs_of[#pairs_of + 1] = score
        pairs_of[#pairs_of + 1] = member
        queued = queued + 1
        touched[lane] = true
        n = n + 1
      end
    end
  end
  for _, q in ipairs(order) do
    local p = adds[q]
    for from = 1, #p, 1000 do
      redis.call('ZADD', q, unpack(p, from, math.min(from + 999, #p)))
    end
  end
  if n > 0 then
    add_all(seen, added)
    if counts then
      counts.pages, counts.res, counts.smf, counts.queued = pages, res, smf, queued
    else
      redis.call('HSET', sk, 'pages', I(pages), 'res', I(res), 'smf', I(smf))
      redis.call('HINCRBY', sk, 'queued', I(queued))
    end
  end
  for code, _ in pairs(over) do
    if redis.call('HSETNX', sk, 'rep_' .. code, '1') == 1 then
      publish(redis.call('HGET', sk, 'lim_' .. code))
    end
  end
  return n
end


-- Quarantine (docs/runbook.md, "A bad entry is quarantined"). Anyone who can write to the
-- deployment's keys can leave a value no step can read, and a Lua error aborts the whole FCALL: one
-- garbage field in a host's hash made every claim fail while its lane was first in `ready`. So each
-- step runs its units of work (claim: a lane; claim_browser: a task; reap: a lease; complete,
-- seed: the call; cancel, forget: a site) under `pcall`, and a unit that fails is quarantined:
--   * its site is recorded in `quarantine` (site -> "first-seen-ms reason"; the coordinator fails
--     the site's audit with that reason, `coordinator/src/engine/quarantine.rs`), marked cancelled
--     and its lanes emptied and taken out of `ready`, so nothing of it is claimed again;
--   * the state it read is looked at (`diagnose`): the fields of its site, lane, lease and hosts
--     that should hold numbers (SITE_NUMBERS etc., generated from keys.rs) and do not are named in
--     the reason; a host's unreadable fields are removed (a host's pace is shared by every audit
--     using it: left as it is, it would fail the next audit's lane too) and its next start set
--     SLOW_GAP ahead, so the host goes on at a careful pace for the others;
--   * the step goes on with its next unit: no other audit's claim, reap or completion fails.
-- Deployment-wide counters (`seq`, `leaseid`, a worker's `wl`, a server IP's `ipf` and `ipg`)
-- belong to no audit: they are reset where they are read (`bump`, `ip_inflight`, `ip_pace`), never
-- blamed. A unit's writes are ordered so that a value it cannot read fails it before it writes
-- anything shared (see grant and release).

-- A stored value, printable and short, for a reason.
local function shown(v)
  return '"' .. (string.gsub(string.sub(tostring(v), 1, 24), '[^%w%p ]', '?')) .. '"'
end

-- The fields of hash `key` among `fields` that hold something other than a number, as
-- "field = value" texts and as names; nil when the key is not a hash at all.
local function unreadable(key, fields)
  local v = redis.pcall('HMGET', key, unpack(fields))
  if v.err then return nil end
  local texts, names = {}, {}
  for i, f in ipairs(fields) do
    if v[i] and tonumber(v[i]) == nil then
      texts[#texts + 1] = f .. ' = ' .. shown(v[i])
      names[#names + 1] = f
    end
  end
  return texts, names
end

-- Resets what cannot be read of a host's pace (see above); returns what it found, or nil.
local function repair_host(host, now)
  local hk = k_host(host)
  local texts, names = unreadable(hk, HOST_NUMBERS)
  if texts and #texts == 0 then return nil end
  if not texts then
    redis.call('DEL', hk)
    texts, names = {'not a hash'}, {'next'}
  else
    redis.call('HDEL', hk, unpack(names))
  end
  for _, f in ipairs(names) do
    if f == 'next' then redis.call('HSET', hk, 'next', I(now + SLOW_GAP)) end
  end
  pcall(recompute, host)
  redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable pace of host ' .. host)
  return 'host ' .. host .. ': ' .. table.concat(texts, ', ')
end

-- What cannot be read of a unit's state (its site, lane and lease, and the hosts of its site's
-- lanes, which are repaired), as one text; '' when nothing is found.
local function diagnose(site, lane, lease, now)
  local found = {}
  local function look(key, fields, label)
    local texts = unreadable(key, fields)
    if not texts then
      found[#found + 1] = label .. ': not a hash'
    elseif #texts > 0 then
      found[#found + 1] = label .. ': ' .. table.concat(texts, ', ')
    end
  end
  if site then look(k_site(site), SITE_NUMBERS, 'site ' .. site) end
  if lane then look(k_lane(lane), LANE_NUMBERS, 'lane ' .. lane) end
  if lease then look(k_lease(lease), LEASE_NUMBERS, 'lease ' .. lease) end
  local lanes = {}
  if lane then lanes[1] = lane end
  if site then
    local all = redis.pcall('SMEMBERS', k_sitelanes(site))
    if not all.err then
      for i, l in ipairs(all) do
        if i > 100 then break end
        lanes[#lanes + 1] = l
      end
    end
  end
  local seen = {}
  for _, l in ipairs(lanes) do
    local host = string.match(l, '^[^|]*|(.+)$')
    if host and not seen[host] then
      seen[host] = true
      local r = repair_host(host, now)
      if r then found[#found + 1] = r end
    end
  end
  return table.concat(found, '; ')
end

-- Takes `site` out of the crawl and records why (see above). The first report is kept.
local function quarantine(site, why, now)
  local entry = I(now) .. QUARANTINE_SEP .. string.sub(why, 1, 400)
  local first = redis.pcall('HSETNX', k_quarantine(), site, entry)
  if type(first) == 'table' then
    redis.call('DEL', k_quarantine())
    first = redis.call('HSETNX', k_quarantine(), site, entry)
  end
  if first == 1 then redis.log(redis.LOG_WARNING, 'shoal: quarantined site ' .. site .. ': ' .. why) end
  if redis.call('EXISTS', k_site(site)) == 1 then redis.pcall('HSET', k_site(site), 'cancelled', '1') end
  local lanes = redis.pcall('SMEMBERS', k_sitelanes(site))
  if not lanes.err then
    for _, lane in ipairs(lanes) do
      if not pcall(drop_lane, lane) then redis.pcall('ZREM', k_ready(), lane) end
    end
  end
  pcall(bdrop, site)
end

-- A unit of work failed with `err`: quarantines its site (`site`, else the lane's: a lane id is
-- `site|host`) with what `diagnose` finds, or the error itself. Returns the site, if any.
local function blame(site, lane, lease, err, now)
  if not site and lane then site = string.match(lane, '^([^|]+)|') end
  local why = diagnose(site, lane, lease, now)
  if why == '' then
    if type(err) == 'table' then err = err.err end
    why = 'a step failed on it: ' .. tostring(err)
  end
  if site then
    quarantine(site, why, now)
  else
    redis.log(redis.LOG_WARNING, 'shoal: a step failed on a unit with no site: ' .. why)
  end
  if lane then redis.pcall('ZREM', k_ready(), lane) end
  return site
end

-- Grants a lease of `blob` on `lane` (claim and claim_browser): a slot of the host (`hk`, whose
-- fields `h` the caller read as inf, maxe, gape, next, ip, ipx, ipr), the host's next start
-- `next_start`, a slot of its IP, the address lookup when it is due, the lease record (`extra`:
-- more field/value pairs) and the site's counters. `further` (may be nil): more tasks of the lane
-- for the same lease, their blobs from index 2 of a list (ZRANGE's answer, whose first is the
-- lease's own task: no table per task), which the caller has copied with their scores into the
-- lease's `leasem` under the id `id` it took; those whose leases expired before are left out (they
-- are leased alone, where their count is kept; the caller takes them out of `leasem`). Returns
-- the lease's id, whether it looks the address up (1/0), its deadline, how often the task's leases
-- expired before, and the further tasks taken: a list of blobs, the index of its first, and their
-- number.
local function grant(lane, host, hk, h, blob, site, worker, now, ttl, next_start, is_robots, prio, extra, ipl, further, id)
  local ip = h[5]
  local inf, ipx = num(h[1], 0), num(h[6], nil)
  -- How often the task's leases expired before (and the further tasks'); `x` on the lease tells
  -- its completion to clear it.
  local expired, taken, from = 0, further, 2
  if redis.call('EXISTS', k_lexp(lane)) == 1 then
    local names = {blob}
    for i = 2, #(further or {}) do names[i] = further[i] end
    local counts = redis.call('HMGET', k_lexp(lane), unpack(names))
    expired = num(counts[1], 0)
    if further then
      taken, from = {}, 1
      for i = 2, #further do
        if not counts[i] then taken[#taken + 1] = further[i] end
      end
    end
  end
  local nt = 0
  if taken then nt = #taken - from + 1 end
  -- The site's counts first: a site hash that cannot be read fails the grant here, before anything
  -- shared (the host's and the IP's slots, the worker's count) is written.
  local k = I(1 + nt)
  redis.call('HINCRBY', k_site(site), 'queued', '-' .. k)
  redis.call('HINCRBY', k_site(site), 'leased', k)
  redis.call('HSET', hk, 'inf', I(inf + 1), 'next', I(next_start))
  if ip then
    bump(k_ipf(ip), 1, 0)
    if ipl > 0 then
      -- The IP's guard is slowed: the next request to it waits its gap (0.5 s per level doubled).
      local _, ipgap = guarded(1, 0, ipl)
      redis.call('HSET', k_ipg(ip), 'next', now + ipgap)
      redis.call('PEXPIRE', k_ipg(ip), LINGER)
    end
  end
  id = id or bump(k_leaseid(), 1, now)
  local ids = I(id)
  local resolve = 0
  if not ipx or ipx <= now then
    resolve = 1
    redis.call('HSET', hk, 'ipr', ids)
  end
  local deadline = now + ttl
  local ds = I(deadline)
  local fields = {'blob', blob, 'lane', lane, 'host', host, 'ip', ip or '', 'robots', is_robots, 'prio', I(prio),
    'site', site, 'worker', worker, 'started', I(now), 'deadline', ds}
  for _, v in ipairs(extra) do fields[#fields + 1] = v end
  if expired > 0 then
    fields[#fields + 1] = 'x'
    fields[#fields + 1] = '1'
  end
  -- The further tasks are in `leasem`, which the claim filled by ZRANGESTORE: Redis copies them
  -- without a Lua string made of any, and the lease hash keeps only small fields (a blob per field,
  -- or all of them packed by cmsgpack, cost more than the rest of the grant).
  if nt > 0 then
    fields[#fields + 1] = 'n'
    fields[#fields + 1] = I(nt)
    fields[#fields + 1] = 'mz'
    fields[#fields + 1] = '1'
  end
  redis.call('HSET', k_lease(ids), unpack(fields))
  redis.call('ZADD', k_leases(), ds, ids)
  bump_worker(worker, '1')
  return id, resolve, deadline, expired, taken, from, nt
end

-- Frees a lease's slots and wakes as many lanes parked on them as are free (`ipcap`: the per-IP
-- cap); the site's count of leased tasks too, unless the caller does that (`site_later`: it reads
-- the site hash anyway). Returns the lease's fields (blob, lane, host, ip, robots, prio, site,
-- started, browser, x: whether the task's leases expired before) or nil, with `more` its further
-- tasks as {blob, priority} (see grant; `false` before `more_from`, whose blobs the caller does
-- not need: a completion reads only those of tasks its worker did not start), `inf` what its host
-- has in flight now and, with an IP, `ipg` its IP guard's fields as `observe` reads them and
-- `fair` whether every slot it freed on the IP went to a lane of an idle host (wake_ip).
local function release(id, now, ipcap, site_later, more_from)
  local lk = k_lease(id)
  local L = redis.call('HMGET', lk, 'blob', 'lane', 'host', 'ip', 'robots', 'prio', 'site', 'started', 'browser', 'x',
    'n', 'worker', 'mz')
  if not L[1] then return nil end
  UNIT.site, UNIT.lane = L[7], L[2]
  -- Everything read as a number first (the lease's and its host's), so one that cannot be read
  -- fails the release before anything is written: the lease stays for its unit's quarantine.
  local nm = num(L[11], 0)
  local hk = k_host(L[3])
  local h = redis.call('HMGET', hk, 'inf', 'maxe', 'ipr', 'blease', 'gape', 'next')
  local h_inf, h_maxe, h_gape, h_next = num(h[1], nil), num(h[2], 1), num(h[5], 0), num(h[6], 0)
  if L[12] and bump_worker(L[12], '-1') <= 0 then redis.call('HDEL', k_wl(), L[12]) end
  L.more = {}
  more_from = more_from or 1
  for i = 1, math.min(more_from - 1, nm) do L.more[i] = false end
  if nm >= more_from and L[13] then
    -- Those from `more_from` on, in their order (their scores are the queue's).
    local m = redis.call('ZRANGE', k_leasem(id), I(more_from - 1), '-1', 'WITHSCORES')
    for i = more_from, nm do
      local j = 2 * (i - more_from)
      L.more[i] = {m[j + 1], math.floor(tonumber(m[j + 2]) / PRIO)}
    end
  elseif nm >= more_from then
    -- A lease granted by an earlier version.
    local mp = redis.call('HGET', lk, 'mp')
    if mp then
      local m = {cmsgpack.unpack(mp)}
      for i = more_from, nm do L.more[i] = {m[2 * i - 1], math.floor(tonumber(m[2 * i]) / PRIO)} end
    else
      -- A lease granted by an earlier version: a field per blob and priority.
      local names = {}
      for i = more_from, nm do
        names[#names + 1] = 'm' .. i
        names[#names + 1] = 'q' .. i
      end
      local m = redis.call('HMGET', lk, unpack(names))
      for i = more_from, nm do
        local j = 2 * (i - more_from)
        L.more[i] = {m[j + 1], m[j + 2]}
      end
    end
  end
  if L[13] then redis.call('DEL', lk, k_leasem(id)) else redis.call('DEL', lk) end
  redis.call('ZREM', k_leases(), id)
  local host_room = 0
  if h[4] == tostring(id) then
    -- The host's page load ended: the next one starts max(gap, BROWSER_GAP) after this end.
    redis.call('HDEL', hk, 'blease')
    redis.call('HSET', hk, 'next', math.max(h_next, now + math.max(h_gape, BROWSER_GAP)))
  end
  local host_inf = 0
  if h_inf then
    local inf = math.max(h_inf - 1, 0)
    host_inf = inf
    redis.call('HSET', hk, 'inf', I(inf))
    if h[3] == tostring(id) then
      redis.call('HDEL', hk, 'ipr')
      h[3] = false
    end
    if not h[3] then host_room = h_maxe - inf end
  end
  if not site_later and redis.call('EXISTS', k_site(L[7])) == 1 then
    redis.call('HINCRBY', k_site(L[7]), 'leased', '-' .. I(1 + nm))
  end
  wake(k_hostwait(L[3]), now, host_room)
  if L[4] ~= '' then
    local n = bump(k_ipf(L[4]), -1, 1)
    if n <= 0 then
      redis.call('DEL', k_ipf(L[4]))
      n = 0
    end
    -- The IP's guard, read once for the cap here and for the completion's sample (apply_signals).
    -- It is every host's at the address: a field that cannot be read resets it, never blames.
    local g = redis.pcall('HMGET', k_ipg(L[4]), 'll', 'lb', 'lr', 'lsc', 'lcm', 'lt')
    if g.err then g = {'-'} end
    if (g[1] and not tonumber(g[1])) or (g[2] and not tonumber(g[2])) or (g[4] and not tonumber(g[4]))
        or (g[5] and not tonumber(g[5])) then
      redis.log(redis.LOG_WARNING, 'shoal: reset the unreadable latency guard of IP ' .. L[4])
      redis.call('DEL', k_ipg(L[4]))
      g = {false, false, false, false, false, false}
    end
    L.ipg = {g[2], g[3], g[1], g[4], g[5], g[6]}
    L.fair = wake_ip(L[4], now, guarded(ipcap, 0, num(g[1], 0)) - n)
  end
  L.inf = host_inf
  return L
end

-- Steps of a latency guard whose state is the hash `k` (fields `lb` baseline, `lr` recent
-- samples newest first, `ll` level, `lsc` samples since the last change, `lcm` calm samples in a
-- row), one per sample of `samples` in order, mirroring shoal_shared::latency::LatencyGuard::observe;
-- the state is read once (`f`, when the caller has read it) and written once. With `tag` (a server
-- IP's guard: the answering host) it keeps the hosts of the recent samples (`lt`) and slows down
-- only when the slow ones came from two hosts (LatencyGuard::observe_gated with
-- slow_on_two_hosts). `samples.texts`, when the caller has them, are the samples as they came (whole
-- milliseconds, as `I` writes them), stored as they are. Returns the changes, each {moved ('s'
-- slowed, 'r' restored), level, recent median ms, baseline ms}.
local function observe(k, samples, tag, f)
  f = f or redis.call('HMGET', k, 'lb', 'lr', 'll', 'lsc', 'lcm', 'lt')
  local samples_in = samples
  local base, level, since, calm = num(f[1], 0), num(f[3], 0), num(f[4], 0), num(f[5], 0)
  -- The samples as numbers for the median, and as the strings they were stored as, so writing
  -- them back formats only the new ones (see I).
  local recent, texts = {}, {}
  for v in string.gmatch(f[2] or '', '%d+') do
    if #recent < GUARD_WINDOW then
      recent[#recent + 1] = tonumber(v)
      texts[#texts + 1] = v
    end
  end
  local tags = nil
  if tag then
    tags = {}
    for v in string.gmatch(f[6] or '', '[^,]+') do
      if #tags < GUARD_WINDOW then tags[#tags + 1] = v end
    end
  end
  local changes = {}
  -- Per sample, in place (a completion brings one per answer of its batch, and this runs twice,
  -- for the host and its IP): the window shifted by hand and its median sorted into one reused
  -- table, instead of table.insert and a new table sorted per sample.
  local n, sorted = #recent, {}
  -- The window's median (the lower one of an even count).
  local function median()
    for i = 1, n do
      local v, j = recent[i], i - 1
      while j > 0 and sorted[j] > v do
        sorted[j + 1] = sorted[j]
        j = j - 1
      end
      sorted[j + 1] = v
    end
    return sorted[math.floor((n - 1) / 2) + 1]
  end
  -- With every answer in the window and in `samples` under GUARD_CALM_RISE, each median is too:
  -- its rise over any baseline is under GUARD_CALM_RISE (calm) and so under GUARD_MIN_RISE (no
  -- trouble), and the median is needed only for a baseline still to set or a change to report.
  local floor = math.floor
  local hi = 0
  for i = 1, n do
    if recent[i] > hi then hi = recent[i] end
  end
  local ns = #samples
  for i = 1, ns do
    if samples[i] > hi then hi = samples[i] end
  end
  local low = hi < GUARD_CALM_RISE and GUARD_CALM_RISE <= GUARD_MIN_RISE
  -- The baseline after one more answer `s` (comparisons, not math.min/max: C functions reached
  -- through the globals, and this runs twice per answer).
  local function next_base(s)
    local cap = floor(base * GUARD_BASE_CAP_NUM / GUARD_BASE_CAP_DEN)
    if s > cap then s = cap end
    local b = floor((base * GUARD_BASE_KEEP + s + GUARD_BASE_ROUND) / GUARD_BASE_WEIGHT)
    if b < 1 then return 1 end
    return b
  end
  -- The window after the first `i` samples, newest first.
  local function window_after(i)
    local w = {}
    for k = i, math.max(1, i - GUARD_WINDOW + 1), -1 do w[#w + 1] = samples[k] end
    for k = 1, GUARD_WINDOW - #w do
      if recent[k] then w[#w + 1] = recent[k] end
    end
    return w
  end
  if low and base > 0 then
    -- The usual case, a server answering well: each sample moves the baseline and the counters,
    -- and can only restore a level; the window is shifted once at the end, and the median of
    -- the window as it was after sample i is needed only for a restore's report.
    for i = 1, ns do
      base = next_base(samples[i])
      if since < GUARD_COUNT_MAX then since = since + 1 end
      if calm < GUARD_COUNT_MAX then calm = calm + 1 end
      if level > 0 and calm >= GUARD_RECOVER then
        level, since, calm = level - 1, 0, 0
        local w = window_after(i)
        table.sort(w)
        changes[#changes + 1] = {'r', level, w[floor((#w - 1) / 2) + 1], base}
      end
    end
    recent = window_after(ns)
    n = #recent
    if tags then
      local t = {}
      for k = 1, math.min(ns, GUARD_WINDOW) do t[k] = tag end
      for k = 1, GUARD_WINDOW - #t do
        if tags[k] then t[#t + 1] = tags[k] end
      end
      tags = t
    end
    samples = {}
  end
  for _, s in ipairs(samples) do
    if n < GUARD_WINDOW then n = n + 1 end
    for i = n, 2, -1 do recent[i] = recent[i - 1] end
    recent[1] = s
    if tags then
      local nt = math.min(#tags + 1, GUARD_WINDOW)
      for i = nt, 2, -1 do tags[i] = tags[i - 1] end
      tags[1] = tag
    end
    since = math.min(since + 1, GUARD_COUNT_MAX)
    if base == 0 then
      if n >= GUARD_MIN_SAMPLES then base = math.max(median(), 1) end
    else
      base = next_base(s)
      local m, trouble, is_calm = nil, false, true
      if not low then
        m = median()
        local rise = math.max(m - base, 0)
        trouble = m >= base * GUARD_RATIO and rise >= GUARD_MIN_RISE
        is_calm = m * GUARD_CALM_DEN < base * GUARD_CALM_NUM or rise < GUARD_CALM_RISE
      end
      if is_calm then calm = math.min(calm + 1, GUARD_COUNT_MAX) else calm = 0 end
      local moved = nil
      if trouble and tags then
        -- A server IP: the slow answers must come from two hosts.
        local first, two = nil, false
        for i, v in ipairs(recent) do
          if v >= base * GUARD_RATIO and v - base >= GUARD_MIN_RISE then
            if not first then first = tags[i] elseif tags[i] ~= first then two = true end
          end
        end
        trouble = two
      end
      if trouble and level < GUARD_MAX_LEVEL and since >= GUARD_SETTLE then
        level, moved = level + 1, 's'
      elseif is_calm and level > 0 and calm >= GUARD_RECOVER then
        level, moved = level - 1, 'r'
      end
      if moved then
        since, calm = 0, 0
        changes[#changes + 1] = {moved, level, m or median(), base}
      end
    end
  end
  -- The window's strings: the new samples (newest first: recent[i] is sample ns - i + 1) as they
  -- came or formatted, then the stored ones that are left.
  local out, given = {}, samples_in.texts
  for i = 1, n do
    if i > ns then
      out[i] = texts[i - ns]
    elseif given then
      out[i] = given[ns - i + 1]
    else
      out[i] = I(recent[i])
    end
  end
  -- Only what moved is written (the counters stop at GUARD_COUNT_MAX, and the level and baseline of a server
  -- answering evenly stay where they are).
  local fields = {'lr', table.concat(out, ',')}
  local function put(name, v, was)
    if v ~= num(was, 0) then
      fields[#fields + 1] = name
      fields[#fields + 1] = I(v)
    end
  end
  put('lb', base, f[1])
  put('ll', level, f[3])
  put('lsc', since, f[4])
  put('lcm', calm, f[5])
  if tags then
    fields[#fields + 1] = 'lt'
    fields[#fields + 1] = table.concat(tags, ',')
  end
  redis.call('HSET', k, unpack(fields))
  return changes
end

-- What answers told about their server (issue 17), applied in the completion's atomic step:
-- `samples` (response ms, in the order of the answers) step the host's guard and its IP's, `quota` (gap ms, or nil) a
-- gap the server stated, `hold` (ms, or nil) a time nothing may start on the host before.
-- Mirrors shoal_shared::pace::HostPace::apply_signals and IpPace::observe. Returns the guards'
-- changes, each {moved ('s', 'r', or 'q' a quota stated for the first time), level, recent
-- median ms (for 'q': the quota's gap), baseline ms, ip ('' for the host's own guard)}, and
-- whether the host's hash exists.
local function apply_signals(host, ip, now, samples, quota, hold, ipf)
  local changes = {}
  local hk = k_host(host)
  -- One read for the host's existence (`next` is set when it is made), its gap and its guard.
  local hf = redis.call('HMGET', hk, 'next', 'gape', 'lb', 'lr', 'll', 'lsc', 'lcm')
  local exists = hf[1] ~= false
  if exists then
    local before = num(hf[2], 0)
    local relevel = false
    if #samples > 0 then
      changes = observe(hk, samples, nil, {hf[3], hf[4], hf[5], hf[6], hf[7]})
      for _, c in ipairs(changes) do c[5] = '' end
      relevel = #changes > 0
    end
    if quota then
      local was = num(redis.call('HGET', hk, 'qg'), 0)
      if quota ~= was then
        redis.call('HSET', hk, 'qg', quota)
        relevel = true
        if was == 0 and quota > 0 and #changes == 0 then
          local g = redis.call('HMGET', hk, 'll', 'lb')
          changes[1] = {'q', num(g[1], 0), quota, num(g[2], 0), ''}
        end
      end
    end
    if relevel then
      local gape = recompute(host)
      if gape and gape > before then
        -- The new gap counts from the host's last start, like any gap.
        redis.call('HSET', hk, 'next', num(redis.call('HGET', hk, 'next'), 0) + gape - before)
      end
    end
    if hold then
      hold = math.min(hold, now + MAX_RETRY_WAIT)
      redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), hold))
    end
  end
  if #samples > 0 and ip and ip ~= '' then
    local ik = k_ipg(ip)
    for _, c in ipairs(observe(ik, samples, host, ipf)) do
      c[5] = ip
      changes[#changes + 1] = c
    end
    redis.call('PEXPIRE', ik, I(LINGER))
  end
  return changes, exists
end

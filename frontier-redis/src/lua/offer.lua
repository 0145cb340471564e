-- Queueing discovered tasks: the seen set, the budgets (`over_budget`, mirroring
-- shoal_shared::frontier::budget) and `offer_all`. Loaded after lanes.lua (scripts.rs, SHARED).

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
-- TaskRuns): a run's head (A_RUN_HEAD: host, kind, depth, prio, not_before, opener, how many
-- tasks), then per task A_RUN_TASK (its seen keys fp and fp2, its blob), of a site whose lanes are open, whose URLs are new to the audit (seen key `fp` not taken, nor `fp2`: a
-- resource check is kept out by the URL's page key) and within the budgets, in order; mirrors the
-- embedded frontier's offer. The site's hash, each lane's state and the seen set are read once
-- for the whole batch and written once, so a page's fifty links cost a handful of commands, not
-- fifty times as many. Budget overruns publish the site's pre-encoded limit finding once. Records
-- the lanes it queued into in `touched`; returns how many were queued. `s` (may be nil): the site's
-- fields of F_OFFER, when the caller read them with its own; `states` (may be nil): lanes
-- whose robots state the caller knows (false: no such lane); `counts` (may be nil): a table that
-- gets the site's new `pages`, `res`, `smf` and the `queued` it added, for the caller to write
-- with its own counts (nothing else here writes them but open_lane, which adds to `queued`).
local function offer_all(site, audit, base, span, now, touched, s, states, counts)
  if span == 0 then return 0 end
  local sk = k_site(site)
  s = s or redis.call('HMGET', sk, unpack(F_OFFER))
  if s[F_OFFER.cancelled] == '1' or s[F_OFFER.done] == '1' then return 0 end
  local maxp, maxd, maxr = num(s[F_OFFER.maxp], nil), num(s[F_OFFER.maxd], nil), num(s[F_OFFER.maxr], nil)
  local pages, res = num(s[F_OFFER.pages], 0), num(s[F_OFFER.res], 0)
  local smf, smb = num(s[F_OFFER.smf], 0), num(s[F_OFFER.smb], 0)
  local maxsf = num(s[F_OFFER.maxsf], DEFAULT_MAX_SITEMAPS)
  local maxsb = num(s[F_OFFER.maxsb], DEFAULT_MAX_SITEMAP_BYTES)
  -- Each task is read where it is in ARGV (`open`: its first argument), not copied into a table;
  -- its run's head once per run (`heads`: kind, depth, prio, nb and lane, per task).
  local open, heads = {}, {}
  states = states or {}
  local j, last = base, base + span
  while j < last do
    local host, rblob, cnt = ARGV[j + A_RUN_HEAD.host], ARGV[j + A_RUN_HEAD.opener], tonumber(ARGV[j + A_RUN_HEAD.count])
    local lane = site .. '|' .. host
    local robots = states[lane]
    if robots == nil then
      robots = redis.call('HGET', k_lane(lane), 'robots') or false
      if not robots and string.sub(rblob, 1, 1) == '-' then
        -- A check that is no HTTP request (DNS, a mail server): its lane opens with its robots
        -- state known (the rest of rblob), under the host's one pace.
        open_known_lane(site, audit, host, string.sub(rblob, 2), num(s[F_OFFER.pmax], DEFAULT_IN_FLIGHT),
          num(s[F_OFFER.pgap], DEFAULT_GAP), now)
        robots = 'k'
        touched[lane] = true
      elseif not robots and rblob ~= '' then
        -- The first link of the site to this other host (or a check of it): open its lane,
        -- robots.txt first, under the host's one pace (the stricter of everyone's limits).
        open_lane(site, audit, host, rblob, num(s[F_OFFER.pmax], DEFAULT_IN_FLIGHT),
          num(s[F_OFFER.pgap], DEFAULT_GAP))
        robots = 'p'
        touched[lane] = true
      end
      states[lane] = robots
    end
    if robots and robots ~= 'c' then
      local head = {kind = ARGV[j + A_RUN_HEAD.kind], depth = tonumber(ARGV[j + A_RUN_HEAD.depth]),
        prio = tonumber(ARGV[j + A_RUN_HEAD.prio]), nb = tonumber(ARGV[j + A_RUN_HEAD.not_before]), lane = lane}
      local first = j + A_RUN_HEAD_SPAN
      for k = first, first + (cnt - 1) * A_RUN_TASK_SPAN, A_RUN_TASK_SPAN do
        open[#open + 1] = k
        heads[#open] = head
      end
    end
    j = j + A_RUN_HEAD_SPAN + cnt * A_RUN_TASK_SPAN
  end
  local keys = {}
  for _, k in ipairs(open) do
    keys[#keys + 1] = ARGV[k + A_RUN_TASK.fp]
    local fp2 = ARGV[k + A_RUN_TASK.fp2]
    if fp2 ~= '' then keys[#keys + 1] = fp2 end
  end
  local seen = k_seen(audit)
  local known = members_of(seen, keys)
  local added, over, queued, n = {}, {}, 0, 0
  -- Queue key -> its new {score, member, ...}, and the queues in the order first used.
  local adds, order, ready = {}, {}, {}
  local seq = bump(k_seq(), I(#open), 0) - #open
  for o, j in ipairs(open) do
    local h = heads[o]
    local fp, fp2, kind = ARGV[j + A_RUN_TASK.fp], ARGV[j + A_RUN_TASK.fp2], h.kind
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
          q, score, member = queue_entry(lane, ARGV[j + A_RUN_TASK.blob], h.prio, nb, now, seq)
        else
          q = ready[lane]
          if not q then
            q = k_lq(lane)
            ready[lane] = q
          end
          score, member = I(h.prio * PRIO + seq), ARGV[j + A_RUN_TASK.blob]
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

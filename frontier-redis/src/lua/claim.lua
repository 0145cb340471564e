-- claim: ARGV = A_CLAIM (params.rs: now, worker, ttl the lease time in ms, ip_cap, batch: tasks per
-- lease at most, '' is 1)
-- Returns {'lease', id, blob, host, ip, started, deadline, gap_ms, resolve, expired, robots_at,
--   epoch (see common.lua), further blobs...} | {'wait', at} | {'idle'}. A lease carries further tasks of its lane (up to
-- batch - 1) only on a host with no gap in force whose address is known and current, on an IP
-- that is not slowed, and only tasks whose leases never expired: the worker fetches them one
-- after another under the lease's one slot of the host and the IP.
local now, worker = tonumber(ARGV[A_CLAIM.now]), ARGV[A_CLAIM.worker]
local ttl, ipcap = tonumber(ARGV[A_CLAIM.ttl]), tonumber(ARGV[A_CLAIM.ip_cap])
local batch = ARGV[A_CLAIM.batch]
local slow_start = ARGV[A_CLAIM.slow_start]
batch = math.max(num(batch ~= '' and batch or nil, 1), 1)
local fenced = fence_raised()
if fenced and now < fence_hold(fenced, ttl) then return {'wait', I(fence_hold(fenced, ttl))} end
-- Fair shares between workers: a worker that holds more leases than another that asked lately and
-- found nothing leaves the slot to it (a worker whose completions claim its next lease in the
-- same step would otherwise keep every slot of a busy IP, and a worker added to the fleet would
-- get none).
-- Both hashes are every worker's, no audit's: an entry that cannot be read counts as stale, or 0.
local hungry = redis.pcall('HGETALL', k_hungry())
if hungry.err then
  redis.call('DEL', k_hungry())
  hungry = {}
end
local was_hungry = false
if #hungry > 0 then
  local stale, others = {}, {}
  for i = 1, #hungry, 2 do
    local w, last = hungry[i], num_or(hungry[i + 1], 0)
    if last < now - HUNGRY_FORGET then
      stale[#stale + 1] = w
    elseif w == worker then
      was_hungry = true
    elseif last >= now - HUNGRY_RECENT then
      others[#others + 1] = w
    end
  end
  if #stale > 0 then redis.call('HDEL', k_hungry(), unpack(stale)) end
  if #others > 0 then
    local held = redis.pcall('HMGET', k_wl(), worker, unpack(others))
    if held.err then
      redis.call('DEL', k_wl())
      held = {}
    end
    local mine = num_or(held[1], 0)
    for i = 2, #held do
      if mine > num_or(held[i], 0) then return {'wait', I(now + 10)} end
    end
  end
end
-- This worker found nothing: it waits for its share (see above).
local function unfed(answer)
  redis.call('HSET', k_hungry(), worker, I(now))
  redis.call('PEXPIRE', k_hungry(), I(HUNGRY_FORGET))
  return answer
end
-- One lane, the first of `ready`: its lease, or nil when it was parked or rescheduled. Run under
-- pcall: a lane whose state cannot be read is quarantined and the claim goes on (quarantine.lua).
local function one(lane)
  local lk = k_lane(lane)
  local l = redis.call('HMGET', lk, unpack(F_LANE_CLAIM))
  local host, robots, site = l[F_LANE_CLAIM.host], l[F_LANE_CLAIM.robots], l[F_LANE_CLAIM.site]
  if robots == 'k' and l[F_LANE_CLAIM.rtpl] and num(l[F_LANE_CLAIM.rat], 0) + ROBOTS_MAX_AGE <= now then
    -- The lane's rules are a day old and it has work: robots.txt again before anything else.
    redis.call('HSET', lk, 'robots', 'p', 'rt', l[F_LANE_CLAIM.rtpl], 'rtnb', 0)
    redis.call('HINCRBY', k_site(site), 'queued', 1)
    robots, l[F_LANE_CLAIM.rt], l[F_LANE_CLAIM.rtnb] = 'p', l[F_LANE_CLAIM.rtpl], '0'
  end
  if not host then
    redis.call('ZREM', k_ready(), lane)
  else
    local hk = k_host(host)
    local h = redis.call('HMGET', hk, unpack(F_HOST_GRANT))
    local inf, maxe = num(h[F_HOST_GRANT.inf], 0), num(h[F_HOST_GRANT.maxe], 1)
    -- The host's slow start (issue 41): a new host has one request in flight until answers open it.
    maxe = slow_started(maxe, num(h[F_HOST_GRANT.lo], 0), slow_start)
    local gape, nxt, ip = num(h[F_HOST_GRANT.gape], 0), num(h[F_HOST_GRANT.next], 0), h[F_HOST_GRANT.ip]
    nxt = fenced_start(fenced, nxt, gape)
    local blob, is_robots, prio, next_due, more = nil, '0', 0, nil, false
    -- Tasks this lease may take: more than one only at no gap and with no lookup due.
    local want = 1
    local ipx = h[F_HOST_GRANT.ipx]
    if batch > 1 and gape == 0 and ipx and num(ipx, 0) > now then want = batch end
    local r = nil
    if robots == 'p' then
      is_robots = '1'
      if l[F_LANE_CLAIM.rt] then
        local nb = num(l[F_LANE_CLAIM.rtnb], 0)
        if nb > now then next_due = nb else blob = l[F_LANE_CLAIM.rt] end
      end
    elseif robots == 'k' then
      promote(lane, now)
      -- Its first task only: the lease's tasks leave the queue below, once the host and IP have
      -- room (a claim parked here reads one task, not a batch's worth).
      r = redis.call('ZRANGE', k_lq(lane), '0', '0', 'WITHSCORES')
      if #r > 0 then
        blob = r[1]
        prio = math.floor(tonumber(r[2]) / PRIO)
      else
        local d = redis.call('ZRANGE', k_ld(lane), '0', '0', 'WITHSCORES')
        if #d > 0 then next_due = tonumber(d[2]) end
      end
    end
    if not blob then
      if next_due then
        redis.call('ZADD', k_ready(), I(math.max(next_due, nxt)), lane)
      else
        redis.call('ZREM', k_ready(), lane)
      end
    elseif inf >= maxe or h[F_HOST_GRANT.ipr] then
      -- Full, or its address is being looked up: the completion of a lease on the host wakes it.
      redis.call('ZREM', k_ready(), lane)
      redis.call('SADD', k_hostwait(host), lane)
    else
      -- The IP's cap, halved per level of its latency guard and lowered by its slow start, and its
      -- next start while slowed.
      local ipl, ipn, ipo = ip_pace(ip)
      if ip and ip_inflight(ip) >= slow_started(guarded(ipcap, 0, ipl), ipo, slow_start) then
        redis.call('ZREM', k_ready(), lane)
        park_ip(ip, lane, inf)
      elseif math.max(nxt, ipn) > now then
        redis.call('ZADD', k_ready(), I(math.max(nxt, ipn)), lane)
      else
        -- Further tasks for a batch, from index 2 of ZRANGE's answer (see grant, which keeps
        -- those whose leases never expired).
        local further, lq, id = nil, k_lq(lane), nil
        if is_robots == '0' then
          -- The lease's tasks taken off the queue, `blob` first; the further ones are copied into
          -- the lease's `leasem` first, by Redis (see grant).
          local take = 1
          if ipl == 0 and want > 1 then take = want end
          if take > 1 then
            id = bump(k_leaseid(), 1, now)
            redis.call('ZRANGESTORE', k_leasem(I(id)), lq, '1', I(take - 1))
          end
          -- The blobs without their scores (ZPOPMIN would have Redis format each as a double,
          -- and Lua keep it as one more string): `leasem` has the scores.
          local p = redis.call('ZRANGE', lq, '0', I(take - 1))
          redis.call('ZREMRANGEBYRANK', lq, '0', I(take - 1))
          if #p > 1 then further = p end
          -- Fewer than asked for: the queue is empty now.
          more = #p == take and redis.call('ZCARD', lq) > 0
        end
        local resolve, deadline, expired, taken, from, nt
        id, resolve, deadline, expired, taken, from, nt =
          grant(lane, host, hk, h, blob, site, worker, now, ttl, now + gape, is_robots, prio, {}, ipl, further, id)
        if is_robots == '1' then
          redis.call('HDEL', lk, 'rt', 'rtnb')
        elseif further and nt < #further - 1 then
          -- A task left out of the batch (its leases expired before) goes back as it was, with its
          -- score from `leasem`: the tasks taken are the further ones in their order, less those
          -- (blobs are unique in a queue).
          local out, ti = {}, from
          for i = 2, #further do
            if taken[ti] == further[i] then ti = ti + 1 else out[#out + 1] = further[i] end
          end
          local mk = k_leasem(I(id))
          local scores = redis.call('ZMSCORE', mk, unpack(out))
          local back = {}
          for i, b in ipairs(out) do
            back[#back + 1] = scores[i]
            back[#back + 1] = b
          end
          redis.call('ZADD', lq, unpack(back))
          redis.call('ZREM', mk, unpack(out))
          more = true
        end
        local robots_at = 0
        if is_robots == '0' then robots_at = num(l[F_LANE_CLAIM.rat], 0) end
        -- lane_score's answer from what this claim knows, without reading the lane and host again:
        -- a robots.txt lease leaves its lane nothing until its answer, a lane with rules has its
        -- next task due, and the host's next start is the one grant just set.
        local s = nil
        if is_robots == '0' then
          local due = lane_due(lane, 'k', nil, nil, more)
          if due then s = math.max(due, now + gape) end
        end
        -- Lanes of one host share its next start, so their scores tie; a fraction that grows with
        -- every lease puts the lane served last behind the others (round robin between the sites
        -- and audits sharing a host) without moving anyone's time.
        if s then
          redis.call('ZADD', k_ready(), string.format('%d.%03d', s, id % 1000), lane)
        else
          redis.call('ZREM', k_ready(), lane)
        end
        if was_hungry then redis.call('HDEL', k_hungry(), worker) end
        local out = {'lease', id, blob, host, ip or '', now, deadline, gape, resolve, expired, robots_at, epoch(now)}
        for i = from, nt + from - 1 do out[#out + 1] = taken[i] end
        return out
      end
    end
  end
  return nil
end
for _ = 1, 256 do
  local c = redis.call('ZRANGE', k_ready(), '0', '0', 'WITHSCORES')
  if #c == 0 then return unfed({'idle'}) end
  -- The integer part is the time; the fraction only breaks ties (see below).
  local lane, score = c[1], math.floor(tonumber(c[2]))
  if score > now then return unfed({'wait', score}) end
  local ok, answer = pcall(one, lane)
  if not ok then
    blame(nil, lane, nil, answer, now)
  elseif answer then
    return answer
  end
end
-- Every lane looked at was parked or rescheduled; look again soon.
return unfed({'wait', now + 10})

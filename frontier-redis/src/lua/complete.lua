-- complete: ARGV = now, lease_id, ip, rate_limited, robots_state ('' | 'k' | 'c'), robots_blob,
--   crawl_delay_ms (''), requeue_blob (''), requeue_is_robots, requeue_prio, requeue_not_before,
--   n_discovered, n_events, then n_discovered x (host, fp, kind, depth, prio, not_before, blob, robots_blob),
--   then n_events x blob.
-- Returns {'stale'} | {'ok', enqueued}.
local now = tonumber(ARGV[1])
local L = release(ARGV[2], now)
if not L then return {'stale'} end
local lane, host, site, started = L[2], L[3], L[7], tonumber(L[8])
local sk = k_site(site)
local audit = redis.call('HGET', sk, 'audit')
local hk = k_host(host)
if ARGV[3] ~= '' and not redis.call('HGET', hk, 'ip') then
  redis.call('HSET', hk, 'ip', ARGV[3])
end
if ARGV[4] == '1' then
  redis.call('HSET', hk, 'slow', '1')
  local gape = recompute(host)
  redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), now + gape))
end
local rstate = ARGV[5]
if rstate ~= '' and redis.call('EXISTS', k_lane(lane)) == 1 then
  redis.call('SET', k_robots(lane), ARGV[6])
  redis.call('HSET', k_lane(lane), 'robots', rstate)
  if ARGV[7] ~= '' then
    redis.call('HSET', hk, 'cd', ARGV[7])
    local gape = recompute(host)
    redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), started + gape))
  end
  if rstate == 'c' then
    redis.call('HINCRBY', sk, 'queued', 0 - drop_lane(lane)) -- not -n: Lua prints -0
  end
end
local cancelled = redis.call('HGET', sk, 'cancelled') == '1'
local lane_state = redis.call('HGET', k_lane(lane), 'robots')
if ARGV[8] ~= '' and not cancelled and lane_state and (lane_state ~= 'c' or ARGV[9] == '1') then
  push(lane, ARGV[8], ARGV[9], ARGV[10], ARGV[11], now)
  redis.call('HINCRBY', sk, 'queued', 1)
else
  redis.call('HINCRBY', sk, 'completed', 1)
end
local n, m, base = tonumber(ARGV[12]), tonumber(ARGV[13]), 14
local touched, enqueued = {}, 0
touched[lane] = true
if not cancelled then
  for i = 0, n - 1 do
    local j = base + i * 8
    enqueued = enqueued + offer(site, audit, ARGV[j], ARGV[j + 1], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4],
      ARGV[j + 5], ARGV[j + 6], ARGV[j + 7], now, touched)
  end
end
for t, _ in pairs(touched) do schedule(t, now) end
for i = 0, m - 1 do publish(ARGV[base + n * 8 + i]) end
check_done(site)
return {'ok', enqueued}

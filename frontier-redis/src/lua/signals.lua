-- signals: ARGV = now, host, response_ms (''), quota_gap_ms (''), hold_until ('').
-- What an answer told about its server, applied to the host's pace (issue 17). Mirrors
-- shoal_shared::pace::HostPace::apply_signals and shoal_shared::latency::LatencyGuard::observe:
-- the latency guard's state lives in the host's hash (`lb` baseline, `lr` recent samples newest
-- first, `ll` level, `lsc` samples since the last change, `lcm` calm samples in a row), the
-- stated quota's gap in `qg`, so all of it expires with the host. Run before `complete`, so the
-- lanes it schedules see the new next start.
-- Returns {} or {moved ('s' slowed, 'r' restored, 'q' a quota stated for the first time), level,
-- recent median ms (for 'q': the quota's gap), baseline ms}.
local now, host = tonumber(ARGV[1]), ARGV[2]
local hk = k_host(host)
if redis.call('EXISTS', hk) == 0 then return {} end
local before = num(redis.call('HGET', hk, 'gape'), 0)
local change, relevel = {}, false
if ARGV[3] ~= '' then
  local s = tonumber(ARGV[3])
  local f = redis.call('HMGET', hk, 'lb', 'lr', 'll', 'lsc', 'lcm')
  local base, level, since, calm = num(f[1], 0), num(f[3], 0), num(f[4], 0), num(f[5], 0)
  local recent = {s}
  for v in string.gmatch(f[2] or '', '%d+') do
    if #recent < GUARD_WINDOW then recent[#recent + 1] = tonumber(v) end
  end
  since = math.min(since + 1, 255)
  local sorted = {}
  for i, v in ipairs(recent) do sorted[i] = v end
  table.sort(sorted)
  local m = sorted[math.floor((#sorted - 1) / 2) + 1]
  if base == 0 then
    if #recent >= GUARD_MIN_SAMPLES then base = math.max(m, 1) end
  else
    local counted = math.min(s, math.floor(base * 5 / 4))
    base = math.max(math.floor((base * 7 + counted + 4) / 8), 1)
    local rise = math.max(m - base, 0)
    local trouble = m >= base * GUARD_RATIO and rise >= GUARD_MIN_RISE
    local is_calm = m * 2 < base * 3 or rise < GUARD_CALM_RISE
    if is_calm then calm = math.min(calm + 1, 255) else calm = 0 end
    local moved = nil
    if trouble and level < GUARD_MAX_LEVEL and since >= GUARD_SETTLE then
      level, moved = level + 1, 's'
    elseif is_calm and level > 0 and calm >= GUARD_RECOVER then
      level, moved = level - 1, 'r'
    end
    if moved then
      since, calm, relevel = 0, 0, true
      change = {moved, level, m, base}
    end
  end
  redis.call('HSET', hk, 'lb', base, 'lr', table.concat(recent, ','), 'll', level, 'lsc', since, 'lcm', calm)
end
if ARGV[4] ~= '' then
  local q, was = tonumber(ARGV[4]), num(redis.call('HGET', hk, 'qg'), 0)
  if q ~= was then
    redis.call('HSET', hk, 'qg', q)
    relevel = true
    if was == 0 and q > 0 and #change == 0 then
      local g = redis.call('HMGET', hk, 'll', 'lb')
      change = {'q', num(g[1], 0), q, num(g[2], 0)}
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
if ARGV[5] ~= '' then
  local hold = math.min(tonumber(ARGV[5]), now + MAX_RETRY_WAIT)
  redis.call('HSET', hk, 'next', math.max(num(redis.call('HGET', hk, 'next'), 0), hold))
end
return change

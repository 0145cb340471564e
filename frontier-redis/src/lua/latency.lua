-- The latency guard (issue 17) per host and per server IP, mirroring shoal_shared::latency
-- (`observe`), and what answers told about their server (`apply_signals`, mirroring
-- HostPace::apply_signals). Loaded last of the shared files (scripts.rs, SHARED).

-- Steps of a latency guard whose state is the hash `k` (fields `lb` baseline, `lr` recent
-- samples newest first, `ll` level, `lsc` samples since the last change, `lcm` calm samples in a
-- row, `lo` the slow start's count, `lc` its ceiling), one per sample of `samples` in order, each
-- taken at `load` (our requests in flight there when the answers came, themselves included),
-- mirroring shoal_shared::latency::LatencyGuard::observe; the state is read once (`f`, when the
-- caller has read it) and written once. With `tag` (a server IP's guard: the answering host) it
-- keeps the hosts of the recent samples (`lt`), counts each sample as ip_sample says against the
-- host's baseline `hbase` (before these answers, 0 for none), and slows down only when the slow
-- ones came from two hosts (IpPace::observe: observe_gated with slow_on_two_hosts).
-- `samples.texts`, when the caller has them, are the samples as they came (whole milliseconds, as
-- `I` writes them), stored as they are. Returns the changes, each {moved ('s' slowed, 'r'
-- restored), level, recent median ms, baseline ms}.
local function observe(k, samples, tag, f, load, hbase)
  f = f or redis.call('HMGET', k, unpack(F_GUARD))
  local floor = math.floor
  local base, level = num(f[F_GUARD.lb], 0), num(f[F_GUARD.ll], 0)
  local since, calm = num(f[F_GUARD.lsc], 0), num(f[F_GUARD.lcm], 0)
  local open, ceil = num(f[F_GUARD.lo], 0), num(f[F_GUARD.lc], 0)
  -- The load as the Rust counts it (a u16 that stops).
  if load > GUARD_OPEN_MAX then load = GUARD_OPEN_MAX end
  hbase = hbase or 0
  -- The window as numbers for the median, and as the strings they are stored as, so writing it
  -- back formats only the new samples (see I).
  local recent, texts = {}, {}
  for v in string.gmatch(f[F_GUARD.lr] or '', '%d+') do
    if #recent < GUARD_WINDOW then
      recent[#recent + 1] = tonumber(v)
      texts[#texts + 1] = v
    end
  end
  local tags = nil
  if tag then
    tags = {}
    for v in string.gmatch(f[F_GUARD.lt] or '', '[^,]+') do
      if #tags < GUARD_WINDOW then tags[#tags + 1] = v end
    end
  end
  local changes = {}
  local n, sorted = #recent, {}
  -- The window's median (the lower one of an even count), sorted into one reused table.
  local function median()
    for i = 1, n do
      local v, j = recent[i], i - 1
      while j > 0 and sorted[j] > v do
        sorted[j + 1] = sorted[j]
        j = j - 1
      end
      sorted[j + 1] = v
    end
    return sorted[floor((n - 1) / 2) + 1]
  end
  -- shoal_shared::latency::is_rise.
  local function is_rise(s, b)
    return b > 0 and s * GUARD_STEP_DEN >= b * GUARD_STEP_NUM and s - b >= GUARD_MIN_RISE
  end
  local given = samples.texts
  for i, s in ipairs(samples) do
    local text = given and given[i]
    -- A server IP: an answer at its own host's pace counts at most as the IP's baseline.
    if tag and hbase > 0 and base > 0 and not is_rise(s, hbase) and s > base then
      s, text = base, nil
    end
    if n < GUARD_WINDOW then n = n + 1 end
    for j = n, 2, -1 do
      recent[j] = recent[j - 1]
      texts[j] = texts[j - 1]
    end
    recent[1], texts[1] = s, text or I(s)
    if tags then
      local nt = math.min(#tags + 1, GUARD_WINDOW)
      for j = nt, 2, -1 do tags[j] = tags[j - 1] end
      tags[1] = tag
    end
    if since < GUARD_COUNT_MAX then since = since + 1 end
    -- The baseline: the fastest answer, rising slowly.
    if base == 0 or s <= base then
      base = math.max(s, 1)
    else
      local cap = floor(base * GUARD_BASE_CAP_NUM / GUARD_BASE_CAP_DEN)
      local c = s
      if c > cap then c = cap end
      base = math.max(floor((base * GUARD_BASE_KEEP + c + GUARD_BASE_ROUND) / GUARD_BASE_WEIGHT), 1)
    end
    -- The slow start's step.
    local o = math.max(open, 1)
    if is_rise(s, base) then
      if load >= 2 then
        if ceil == 0 or load < ceil then ceil = load end
        open = math.min(o, load - 1)
      end
    elseif load >= o and o < GUARD_OPEN_MAX and (ceil == 0 or o + 1 < ceil) then
      open = o + 1
    end
    if n >= GUARD_MIN_SAMPLES then
      local m = median()
      local rise = math.max(m - base, 0)
      local trouble = m >= base * GUARD_RATIO and rise >= GUARD_MIN_RISE
      local is_calm = m * GUARD_CALM_DEN < base * GUARD_CALM_NUM or rise < GUARD_CALM_RISE
      if is_calm then calm = math.min(calm + 1, GUARD_COUNT_MAX) else calm = 0 end
      if trouble and tags then
        -- A server IP: the slow answers must come from two hosts.
        local first, two = nil, false
        for j, v in ipairs(recent) do
          if v >= base * GUARD_RATIO and v - base >= GUARD_MIN_RISE then
            if not first then first = tags[j] elseif tags[j] ~= first then two = true end
          end
        end
        trouble = two
      end
      local moved = nil
      if trouble and level < GUARD_MAX_LEVEL and since >= GUARD_SETTLE then
        level, moved = level + 1, 's'
      elseif is_calm and level > 0 and calm >= GUARD_RECOVER then
        level, moved = level - 1, 'r'
      end
      if moved then
        since, calm = 0, 0
        changes[#changes + 1] = {moved, level, m, base}
      end
    end
  end
  -- Only what moved is written (the counters stop at GUARD_COUNT_MAX, and the level, baseline and
  -- slow start of a server answering evenly stay where they are).
  local fields = {'lr', table.concat(texts, ',', 1, n)}
  local function put(name, v, was)
    if v ~= num(was, 0) then
      fields[#fields + 1] = name
      fields[#fields + 1] = I(v)
    end
  end
  put('lb', base, f[F_GUARD.lb])
  put('ll', level, f[F_GUARD.ll])
  put('lsc', since, f[F_GUARD.lsc])
  put('lcm', calm, f[F_GUARD.lcm])
  put('lo', open, f[F_GUARD.lo])
  put('lc', ceil, f[F_GUARD.lc])
  if tags then
    fields[#fields + 1] = 'lt'
    fields[#fields + 1] = table.concat(tags, ',')
  end
  redis.call('HSET', k, unpack(fields))
  return changes
end

-- What answers told about their server (issue 17), applied in the completion's atomic step:
-- `samples` (response ms, in the order of the answers) step the host's guard and its IP's, `quota` (gap ms, or nil) a
-- gap the server stated, `hold` (ms, or nil) a time nothing may start on the host before; `load`
-- and `ipload` our requests in flight to the host and to its IP when the answers came.
-- Mirrors shoal_shared::pace::HostPace::apply_signals and IpPace::observe. Returns the guards'
-- changes, each {moved ('s', 'r', or 'q' a quota stated for the first time), level, recent
-- median ms (for 'q': the quota's gap), baseline ms, ip ('' for the host's own guard)}, and
-- whether the host's hash exists.
local function apply_signals(host, ip, now, samples, quota, hold, ipf, load, ipload)
  local changes = {}
  local hk = k_host(host)
  -- One read for the host's existence (`next` is set when it is made), its gap and its guard.
  local hf = redis.call('HMGET', hk, unpack(F_GUARD))
  local exists = hf[F_GUARD.next] ~= false
  -- The host's baseline before these answers, against which its IP counts them.
  local hbase = num_or(hf[F_GUARD.lb], 0)
  if exists then
    local before = num(hf[F_GUARD.gape], 0)
    local relevel = false
    if #samples > 0 then
      changes = observe(hk, samples, nil, hf, load, 0)
      for _, c in ipairs(changes) do c[5] = '' end
      relevel = #changes > 0
    end
    if quota then
      local was = num(redis.call('HGET', hk, 'qg'), 0)
      if quota ~= was then
        redis.call('HSET', hk, 'qg', quota)
        relevel = true
        if was == 0 and quota > 0 and #changes == 0 then
          local g = redis.call('HMGET', hk, unpack(F_HOST_LEVEL))
          changes[1] = {'q', num(g[F_HOST_LEVEL.ll], 0), quota, num(g[F_HOST_LEVEL.lb], 0), ''}
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
    for _, c in ipairs(observe(ik, samples, host, ipf, ipload, hbase)) do
      c[5] = ip
      changes[#changes + 1] = c
    end
    redis.call('PEXPIRE', ik, I(LINGER))
  end
  return changes, exists
end

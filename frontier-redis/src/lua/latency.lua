-- The latency guard (issue 17) per host and per server IP, mirroring shoal_shared::latency
-- (`observe`), and what answers told about their server (`apply_signals`, mirroring
-- HostPace::apply_signals). Loaded last of the shared files (scripts.rs, SHARED).

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
  f = f or redis.call('HMGET', k, unpack(F_GUARD))
  local samples_in = samples
  local base, level = num(f[F_GUARD.lb], 0), num(f[F_GUARD.ll], 0)
  local since, calm = num(f[F_GUARD.lsc], 0), num(f[F_GUARD.lcm], 0)
  -- The samples as numbers for the median, and as the strings they were stored as, so writing
  -- them back formats only the new ones (see I).
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
  put('lb', base, f[F_GUARD.lb])
  put('ll', level, f[F_GUARD.ll])
  put('lsc', since, f[F_GUARD.lsc])
  put('lcm', calm, f[F_GUARD.lcm])
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
  local hf = redis.call('HMGET', hk, unpack(F_GUARD))
  local exists = hf[F_GUARD.next] ~= false
  if exists then
    local before = num(hf[F_GUARD.gape], 0)
    local relevel = false
    if #samples > 0 then
      changes = observe(hk, samples, nil, hf)
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
    for _, c in ipairs(observe(ik, samples, host, ipf)) do
      c[5] = ip
      changes[#changes + 1] = c
    end
    redis.call('PEXPIRE', ik, I(LINGER))
  end
  return changes, exists
end

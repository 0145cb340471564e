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

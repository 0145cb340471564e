-- Shared functions of Shoal's frontier scripts: the first of the shared files, which scripts.rs
-- (SHARED) loads in order after the generated prelude (the key builders of keys.rs and the rules'
-- constants of rules.rs) and before the steps. A Lua local is visible only below its definition:
-- each file uses what the files before it define. This one: reading stored numbers, counters,
-- the epoch and publishing events.
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

-- The failover fence (fence.lua): when it was raised, or nil. A claim grants nothing before
-- `fence_hold` (every lease given before the failover has ended or expired by then: the new master
-- may not count them), and no request to a host before `fenced_start` (a full gap after the
-- fence: the host's last start may be among the writes the new master lacks).
local function fence_raised()
  return num_or(redis.call('GET', k_fence()), nil)
end

local function fence_hold(fenced, ttl)
  return fenced + math.max(FAILOVER_HOLD, ttl)
end

local function fenced_start(fenced, nxt, gap)
  if fenced then return math.max(nxt, fenced + gap) end
  return nxt
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

-- A stored record of a layout this version no longer reads (keys.rs, FRONTIER_SCHEMA): the step
-- stops with an error that says so and names the upgrade step, rather than guess at the record
-- or quarantine its site (nothing is wrong with the site). Raised as a table, which the steps'
-- pcalls hand on as Redis' error reply (schema_error) instead of blaming a unit.
local function old_schema(what)
  error({schema = 'SCHEMA shoal frontier schema ' .. FRONTIER_SCHEMA .. ': ' .. what .. '; before upgrading from a '
    .. 'version of an earlier frontier schema, let its leases end (docs/runbook.md, "Upgrading")'}, 0)
end

-- The error reply for an error old_schema raised, nil for any other.
local function schema_error(err)
  if type(err) == 'table' and err.schema then return redis.error_reply(err.schema) end
  return nil
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

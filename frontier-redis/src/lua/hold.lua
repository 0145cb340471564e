-- hold: ARGV = A_HOLD (params.rs: host, until_ms, gap (ms)). A worker's request to the host leaves no sooner than
-- `until`, later than its lease's start (the worker's own spacing held it back): the host's next
-- start moves to at least until + gap, never earlier, so another worker's request keeps the gap
-- to it. A host whose clock is gone keeps none.
local hk = k_host(ARGV[A_HOLD.host])
local nxt = redis.call('HGET', hk, 'next')
if nxt then
  -- A clock that cannot be read is set (the host's claim finds the rest; quarantine.lua).
  local want = tonumber(ARGV[A_HOLD.until_ms]) + tonumber(ARGV[A_HOLD.gap])
  if want > num_or(nxt, 0) then redis.call('HSET', hk, 'next', I(want)) end
end
return 1

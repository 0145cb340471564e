-- depart: ARGV = A_DEPART (params.rs: host, slot, at, gap (ms)). A worker's request to the host
-- would leave at `at`, later than `slot`, the start the frontier gave it (the worker's own spacing
-- held it back, or a busy machine woke it late). Whether another start was given after the slot
-- shows in the host's clock: ours set `next` to slot + gap, a later grant (or a hold the server
-- asked for) set it further. Nothing later: the request leaves at `at`. Something later: it
-- leaves no sooner than `next`, a gap after that one. Either way the host's next start moves to a
-- gap after the departure, never earlier, so no two requests reach the host less than a gap apart.
-- Returns when the request may leave. A host whose clock is gone keeps none.
local at = tonumber(ARGV[A_DEPART.at])
local nxt = redis.call('HGET', k_host(ARGV[A_DEPART.host]), 'next')
if not nxt then return at end
-- A clock that cannot be read is set (the host's claim finds the rest; quarantine.lua).
local n, gap = num_or(nxt, 0), tonumber(ARGV[A_DEPART.gap])
local leave = at
if n > tonumber(ARGV[A_DEPART.slot]) + gap then leave = math.max(at, n) end
if leave + gap > n then redis.call('HSET', k_host(ARGV[A_DEPART.host]), 'next', I(leave + gap)) end
return leave

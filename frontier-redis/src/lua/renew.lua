-- renew: ARGV = A_RENEW (params.rs: now, ttl, worker), then lease ids. The worker's heartbeat: each lease it
-- still holds gets the deadline now + ttl; a lease reclaimed, completed or held by another worker
-- is reported lost and left alone. Returns {deadline, lost ids...}.
local now, ttl, worker = tonumber(ARGV[A_RENEW.now]), tonumber(ARGV[A_RENEW.ttl]), ARGV[A_RENEW.worker]
local deadline = now + ttl
local out = {deadline}
for i = A_RENEW_REST, #ARGV do
  local id = ARGV[i]
  if redis.call('HGET', k_lease(id), 'worker') == worker then
    redis.call('HSET', k_lease(id), 'deadline', deadline)
    redis.call('ZADD', k_leases(), deadline, id)
  else
    out[#out + 1] = id
  end
end
return out

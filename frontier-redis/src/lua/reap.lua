-- reap: ARGV = now, max, ip_cap. Leases past their deadline give back their slots; their tasks return to
-- their lanes with one more expired lease counted (lexp), so a task that kills or hangs every worker
-- that takes it is given up after MAX_LEASE_EXPIRIES; so do a batch's further tasks (the worker may
-- have been working on any of them). Returns how many were reclaimed.
local now, max, ipcap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', k_leases(), '-inf', now, 'LIMIT', 0, max)
for _, id in ipairs(ids) do
  local L = release(id, now, ipcap)
  if L then
    local lane, site = L[2], L[7]
    local sk = k_site(site)
    local tasks = I(1 + #L.more)
    if redis.call('HGET', sk, 'cancelled') == '1' or not redis.call('HGET', k_lane(lane), 'robots') then
      redis.call('HINCRBY', sk, 'completed', tasks)
      check_done(site)
    else
      redis.call('HINCRBY', k_lexp(lane), L[1], 1)
      if L[9] == '1' then bpush(lane, site, L[1], 0) else push(lane, L[1], L[5], L[6], 0, now) end
      for _, t in ipairs(L.more) do
        redis.call('HINCRBY', k_lexp(lane), t[1], 1)
        push(lane, t[1], '0', t[2], 0, now)
      end
      redis.call('HINCRBY', sk, 'queued', tasks)
      schedule(lane, now)
    end
  end
end
return #ids

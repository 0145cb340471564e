-- fence: ARGV = A_FENCE (params.rs: now, replid the master's replication id, ttl the lease time in
-- ms). Run by a process that follows Sentinels on each new connection to a master, before anything
-- else it sends there (conn.rs). Redis replicates asynchronously: a promoted replica may lack the
-- old master's last writes, among them leases granted and hosts' next starts whose requests are
-- under way. A master whose replication id differs from the one the state was last written on is
-- such a master (a restarted one too: its last second may be lost). The fence then holds every
-- grant until every lease given before has ended or expired, and every host's next start a full
-- gap after it (fenced_start in common.lua); the epoch starts again, so each process forgets what
-- it remembers of Redis' content (the links it sent, sent.rs). Returns 1 when it raised the
-- fence, 0 otherwise (the same master, or a namespace new to Sentinels).
local now, replid = tonumber(ARGV[A_FENCE.now]), ARGV[A_FENCE.replid]
local known = redis.call('GET', k_replid())
if known == replid then return 0 end
redis.call('SET', k_replid(), replid)
if not known then return 0 end
-- A fence raised again (two failovers close together) holds from the later one.
local hold = math.max(FAILOVER_HOLD, tonumber(ARGV[A_FENCE.ttl]))
redis.call('SET', k_fence(), I(now), 'PXAT', I(now + hold + MAX_GAP))
redis.call('SET', k_epoch(), I(now))
return 1

-- Replay, step 1 of 2 scripts: free the job id for a new lifecycle, once per dead letter.
-- KEYS[1] idempotency key, KEYS[2] job record, KEYS[3] cancel marker, KEYS[4] replay mark
-- (all tagged by the job id: one Cluster slot). ARGV[1] dead-letter id, ARGV[2] mark TTL s.
-- The mark remembers which dead letter last freed the id: a replay run again (it died after
-- this step, or two operators at once) must not free it a second time, or a repeat of the
-- intake entry would no longer be a duplicate. Returns 1 if it cleared, 0 if done before.
if redis.call('GET', KEYS[4]) == ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SET', KEYS[4], ARGV[1], 'EX', tonumber(ARGV[2]))
return 1

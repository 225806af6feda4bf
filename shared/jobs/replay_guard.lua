-- Replay, step 2 of 2 scripts: lift the job's terminal-event guard, once per dead letter.
-- KEYS[1] terminal guard of the job, KEYS[2] replay mark of the dead letter (both in the
-- events stream's Cluster slot). ARGV[1] mark TTL s.
-- Lifted only before the new lifecycle's entry is written, never again for this dead letter:
-- lifting it after the new lifecycle ended would let a second terminal event through.
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[1])) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0

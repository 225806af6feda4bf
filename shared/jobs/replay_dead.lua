-- Replay one dead letter: give its job id a second lifecycle and re-submit it, atomically.
-- KEYS[1] terminal guard of the job, KEYS[2] idempotency key, KEYS[3] job record,
-- KEYS[4] cancel marker, KEYS[5] intake stream, KEYS[6] dead-letter stream
-- ARGV[1] dead-letter entry id, ARGV[2] intake maxlen (approximate), ARGV[3..] field, value ...
-- One script, so no half-done replay is possible: without the guard and the key cleared the
-- re-submission would be dropped as a duplicate (or its end suppressed); with them cleared but
-- no entry written the job id would be free for anyone. Removing the dead letter in the same
-- step makes `replay --all` safe to run twice. Returns the new intake entry id, or false when
-- the dead letter is gone (already replayed, purged or trimmed).
if redis.call('XDEL', KEYS[6], ARGV[1]) == 0 then
  return false
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
return redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[2], '*', unpack(fields))

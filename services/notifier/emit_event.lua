-- Write one public event, with the exactly-one-terminal-event guard.
-- KEYS[1] terminal guard key of the job, KEYS[2] public events stream, KEYS[3] (optional) the
-- key a large result waits under (shared/solving/report.py)
-- ARGV[1] '1' if the event is terminal else '0', ARGV[2] guard TTL seconds,
-- ARGV[3] stream maxlen (approximate), ARGV[4..] field, value, field, value ...
-- Guard and XADD happen in one script, so a crash can neither duplicate the terminal event
-- (guard set without XADD is impossible) nor lose it (XADD without guard is impossible).
-- The guard holds the terminal event's entry id: a reader that comes late (the BullMQ bridge
-- re-attaching after a crash) finds the event itself, not only that it exists.
-- With KEYS[3], the `result` field's value is that key's, copied inside Redis, and the key is
-- deleted with the event written or suppressed; a missing key is a `NORESULT` error, and
-- nothing is written (the notifier answers the job with a failed event instead).
if redis.call('EXISTS', KEYS[1]) == 1 then
  -- A second terminal event, or progress after the end (a late redelivery): drop it.
  if KEYS[3] then redis.call('DEL', KEYS[3]) end
  return false
end
local fields = {}
for i = 4, #ARGV, 2 do
  local value = ARGV[i + 1]
  if KEYS[3] and ARGV[i] == 'result' then
    value = redis.call('GET', KEYS[3])
    if not value then return redis.error_reply('NORESULT ' .. KEYS[3]) end
  end
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = value
end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(fields))
if ARGV[1] == '1' then
  redis.call('SET', KEYS[1], id, 'EX', tonumber(ARGV[2]))
end
if KEYS[3] then redis.call('DEL', KEYS[3]) end
return id

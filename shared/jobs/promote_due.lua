-- Move due entries from the delay schedule into the jobs stream, atomically.
-- KEYS[1] schedule sorted set (score = due time in ms, member = encoded stream entry)
-- KEYS[2] jobs stream
-- ARGV[1] now in ms, ARGV[2] batch size, ARGV[3] stream maxlen (approximate)
-- Several triage replicas may run this at once: a member is read and removed inside one
-- script, so exactly one of them forwards it.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', '__data__', member)
  redis.call('ZREM', KEYS[1], member)
end
return #due

-- Move due entries from the delay schedules into the jobs streams, atomically.
-- KEYS pairs, one per priority, highest first: KEYS[2i-1] schedule sorted set (score = due
-- time in ms, member = encoded stream entry), KEYS[2i] that priority's jobs stream
-- ARGV[1] now in ms, ARGV[2] batch size (over all pairs), ARGV[3] stream maxlen (approximate)
-- Several triage replicas may run this at once: a member is read and removed inside one
-- script, so exactly one of them forwards it.
local left = tonumber(ARGV[2])
local moved = 0
for i = 1, #KEYS, 2 do
  if left <= 0 then break end
  local due = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', ARGV[1], 'LIMIT', 0, left)
  for _, member in ipairs(due) do
    redis.call('XADD', KEYS[i + 1], 'MAXLEN', '~', ARGV[3], '*', '__data__', member)
    redis.call('ZREM', KEYS[i], member)
  end
  moved = moved + #due
  left = left - #due
end
return moved

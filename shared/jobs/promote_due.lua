-- Move due entries from the delay schedule into the jobs stream, atomically.
-- KEYS[1] schedule sorted set (score = due time in ms, member = encoded stream entry, or
--         `ref:<job id>` for a `not_before` job whose entry is in KEYS[3])
-- KEYS[2] jobs stream
-- KEYS[3] the `not_before` jobs' entries, a hash by job id
-- ARGV[1] now in ms, ARGV[2] batch size, ARGV[3] stream maxlen (approximate)
-- Several triage replicas may run this at once: a member is read and removed inside one
-- script, so exactly one of them forwards it. A `ref:` whose entry is gone was cancelled.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  local entry = member
  if string.sub(member, 1, 4) == 'ref:' then
    local id = string.sub(member, 5)
    entry = redis.call('HGET', KEYS[3], id)
    redis.call('HDEL', KEYS[3], id)
  end
  if entry then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', '__data__', entry)
  end
  redis.call('ZREM', KEYS[1], member)
end
return #due

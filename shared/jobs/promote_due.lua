-- Move due entries from the delay schedules into the jobs streams, atomically.
-- KEYS[1] the `not_before` jobs' entries, a hash by job id
-- then pairs, one per priority, highest first: KEYS[2i] schedule sorted set (score = due time
-- in ms, member = encoded stream entry, or `ref:<job id>` for a `not_before` job whose entry is
-- in KEYS[1]), KEYS[2i+1] that priority's jobs stream
-- ARGV[1] now in ms, ARGV[2] batch size (over all pairs). No MAXLEN: the solver trims what it
-- consumed from its streams, and a cap would cut jobs it has not read.
-- Several triage replicas may run this at once: a member is read and removed inside one
-- script, so exactly one of them forwards it. A `ref:` whose entry is gone was cancelled.
local left = tonumber(ARGV[2])
local moved = 0
for i = 2, #KEYS, 2 do
  if left <= 0 then break end
  local due = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', ARGV[1], 'LIMIT', 0, left)
  for _, member in ipairs(due) do
    local entry = member
    if string.sub(member, 1, 4) == 'ref:' then
      local id = string.sub(member, 5)
      entry = redis.call('HGET', KEYS[1], id)
      redis.call('HDEL', KEYS[1], id)
    end
    if entry then
      redis.call('XADD', KEYS[i + 1], '*', '__data__', entry)
    end
    redis.call('ZREM', KEYS[i], member)
  end
  moved = moved + #due
  left = left - #due
end
return moved

-- The intake stream's health, seen from the intake's group, and the group's lag repaired.
-- KEYS[1] the intake stream; ARGV[1] the intake's group
-- Returns {vanished, last generated id}: vanished counts entries that left the stream before
-- the group read them (a producer's `XADD ... MAXLEN 0`, or MINID past the backlog).
-- Every entry added was either read by the group or is still waiting in the stream, unless it
-- vanished: vanished = added - read - (length - pending). Entries the group read but nobody
-- trimmed yet make it an undercount, never an overcount, and the intake trims them just before.
-- Such a trim leaves the group's read counter behind for good: Redis would report the
-- vanished entries as lag for ever (KEDA scales on it, the health check waits for them).
-- SETID at the same id, without ENTRIESREAD, drops the counter; Redis then derives the lag
-- from the stream itself, exactly, and counts on from the next read of the newest entry.
local function fields(flat)
  local m = {}
  for i = 1, #flat, 2 do m[flat[i]] = flat[i + 1] end
  return m
end
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, '0-0'} end
local stream = fields(redis.call('XINFO', 'STREAM', KEYS[1]))
local last = stream['last-generated-id']
local group
for _, row in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local g = fields(row)
  if g['name'] == ARGV[1] then group = g end
end
if not group then return {0, last} end
local read = group['entries-read']
if not read then
  -- Unknown (Redis then derives the lag itself); nothing read yet is nothing read.
  if group['last-delivered-id'] ~= '0-0' then return {0, last} end
  read = 0
end
local vanished = tonumber(stream['entries-added']) - tonumber(read)
  - tonumber(stream['length']) + tonumber(group['pending'])
if vanished <= 0 then return {0, last} end
redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], group['last-delivered-id'])
return {vanished, last}

-- One read of a prioritized hop: the next entries for this consumer, highest priority first.
-- KEYS[1] high, KEYS[2] normal, KEYS[3] low: one hop's streams, in one Cluster slot
-- ARGV[1] group, ARGV[2] consumer, ARGV[3] most entries to take, ARGV[4] aging in ms
-- Returns {1, <XREADGROUP reply>} with the entries taken (all from one stream), or, when no
-- stream holds an undelivered entry, {0, {tail id of each stream}} for the caller to block on
-- (XREAD from those ids wakes on the first new entry).
-- A low entry whose wait (from its `since` field, else its id) plus the aging exceeds the wait
-- of the oldest undelivered normal entry is served first, one at a time: low competes as a
-- normal job queued `aging` later (docs/decisions/0016-priorities.md).
local group, consumer, count, aging = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

local function take(key, n)
  return redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', n, 'STREAMS', key, '>')
end

-- When the stream's next undelivered entry was queued, in ms; nil when there is none.
local function queued_at(key)
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', key)
  if not ok then
    return nil -- no stream yet: nothing waits in it
  end
  local last, lag = nil, nil
  for _, g in ipairs(groups) do
    local f = {}
    for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
    if f['name'] == group then last, lag = f['last-delivered-id'], f['lag'] end
  end
  -- No group yet (the XREADGROUP below reports it), or nothing undelivered: the common case
  -- costs this one command. `lag` is unknown (nil) after deletions; XRANGE then tells.
  if last == nil or lag == 0 then
    return nil
  end
  local head = redis.call('XRANGE', key, '(' .. last, '+', 'COUNT', 1)[1]
  if head == nil then
    return nil
  end
  local fields = head[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'since' then return tonumber(fields[i + 1]) end
  end
  return tonumber(string.match(head[1], '^(%d+)'))
end

local got = take(KEYS[1], count)
if got then return {1, got} end

local low_at = queued_at(KEYS[3])
if low_at ~= nil then
  local normal_at = queued_at(KEYS[2])
  if normal_at ~= nil and low_at + aging <= normal_at then
    got = take(KEYS[3], 1)
    if got then return {1, got} end
  end
end

got = take(KEYS[2], count)
if got then return {1, got} end
got = take(KEYS[3], count)
if got then return {1, got} end

local tails = {}
for i = 1, 3 do
  local last = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)[1]
  tails[i] = last and last[1] or '0-0'
end
return {0, tails}

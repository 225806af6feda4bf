-- Hand one BullMQ job over to ShiftStream: claim its job id for this BullMQ job and append
-- the intake entry, in one step, so a bridge that dies can neither leave a claim without its
-- entry nor send the entry twice when BullMQ gives the job back.
-- KEYS[1] the job id's bridge claim ({<intake>}:bridged:<id>), KEYS[2] the intake stream
-- ARGV[1] the BullMQ job's identity (queue:timestamp), ARGV[2] claim TTL seconds,
-- ARGV[3] intake maxlen (approximate), ARGV[4] 'claim' or 'resend',
-- ARGV[5..] field, value, field, value ... of the intake entry
-- Returns {'new', entry id}, {'again', ''} (this job was handed over before),
-- {'resent', entry id} ('resend' of a job handed over before), or {'taken', other identity}.
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then
  return {'taken', owner}
end
if owner and ARGV[4] ~= 'resend' then
  return {'again', ''}
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(fields))
if owner then
  return {'resent', id}
end
return {'new', id}

--[[
Pet Store API rate limiter: one atomic decision for one subject (redis-store.ts calls it with
EVALSHA; sliding-window.ts holds the same math in TypeScript and the conformance suite holds the
two to identical decisions).

KEYS (all share the hash tag {subject}, so the script runs on Redis Cluster):
  1 revoked   (string; its existence revokes the subject; written by the keys CLI)
  2 ban       (string: ban end, Unix ms)
  3 strikes   (hash: n, until)
  4 offences  (hash: n, until)
  5 record    (hash, API keys only; written by the keys CLI except lu): p plan, m per minute,
              d per day (the plan in force after set-plan), g the newest generation (keys roll),
              r<generation> Unix ms until which that older generation still works, lu last use
  6.. one hash per window: "<bucket index>" -> count, "x<bucket index>" -> next bucket index
      (a linked list, oldest to newest), t (running total), o (oldest index), n (newest index)
ARGV (few and packed: every argument costs the client encoding it and Redis parsing it):
  1 now in Unix ms, or "" to use Redis TIME (production; tests inject a clock)
  2 the policy, space-separated integers: ban after (refusals), ban length ms, max ban length ms,
    offence memory ms, number of windows, then per window: window ms, limit, bucket ms; last,
    how long a key's record outlives its last use, ms (KEYS_DIR holds the truth; `keys sync`)
  3 the generation of the request's API key, or "" for a subject without a record (an address)
  4 "" to decide; n > 0 to count n requests without deciding anything (a replica folds back
    what it admitted from memory during an outage: into the current bucket, so they count at
    least as long as they should, never less)
Reply: one string of space-separated tokens (cheaper to decode than an array of integers):
         outcome (0 admitted, 1 limited, 2 banned, 3 revoked, 4 rolled), now ms, ban until ms,
         the record's plan or "-", then per window: limit, remaining, reset at ms, release at ms,
         refused (0/1). The record's limits replace the 60 s and the 86,400 s windows' limits.
Every key written gets a TTL, so idle subjects disappear.
]]

-- Redis < 5 only: replicate effects, so reading TIME before writing is allowed.
if redis.replicate_commands then redis.replicate_commands() end

local function int(x) return string.format('%d', x) end

local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local policy = {}
for n in string.gmatch(ARGV[2], '%S+') do policy[#policy + 1] = tonumber(n) end
local banAfter, banMs, maxBanMs, offenceMemoryMs, nWindows = policy[1], policy[2], policy[3], policy[4], policy[5]
local REVOKED, BAN, STRIKES, OFFENCES, RECORD = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local generation, weight = ARGV[3], tonumber(ARGV[4]) or 0

local function expiry(w, index) return (index + 1) * w.bucketMs + w.windowMs end

-- Load each window's running total, oldest and newest bucket and the current bucket's count, and
-- drop the buckets that left the window, oldest first along the links (O(1) per expired bucket).
local windows = {}
for i = 1, nWindows do
  local base = 5 + (i - 1) * 3
  local w = { key = KEYS[5 + i], windowMs = policy[base + 1], limit = policy[base + 2],
              bucketMs = policy[base + 3], total = 0, refused = 0 }
  w.current = math.floor(now / w.bucketMs)
  local head = redis.call('HMGET', w.key, 't', 'o', 'n', int(w.current))
  w.total = tonumber(head[1]) or 0
  w.currentCount = tonumber(head[4]) or 0
  if w.total > 0 then
    w.oldest, w.newest = tonumber(head[2]), tonumber(head[3])
    local first = math.floor((now - w.windowMs) / w.bucketMs)
    if w.newest < first then
      redis.call('DEL', w.key)
      w.total = 0
    elseif w.oldest < first then
      while w.oldest and w.oldest < first do
        local field = int(w.oldest)
        local bucket = redis.call('HMGET', w.key, field, 'x' .. field)
        redis.call('HDEL', w.key, field, 'x' .. field)
        w.total = w.total - (tonumber(bucket[1]) or 0)
        w.oldest = tonumber(bucket[2])
      end
      if w.oldest == nil or w.total <= 0 then
        redis.call('DEL', w.key)
        w.total = 0
      else
        redis.call('HSET', w.key, 't', int(w.total), 'o', int(w.oldest))
      end
    end
  end
  windows[i] = w
end

-- Earliest instant >= now at which at most `target` of the counted requests still count.
local function whenAtMost(w, target)
  if w.total <= target then return now end
  if w.total - 1 == target then return expiry(w, w.oldest) end
  local left, index = w.total, w.oldest
  while index do
    local field = int(index)
    local bucket = redis.call('HMGET', w.key, field, 'x' .. field)
    left = left - (tonumber(bucket[1]) or 0)
    if left <= target then return expiry(w, index) end
    index = tonumber(bucket[2])
  end
  return expiry(w, w.newest)
end

local plan = '-'
local function reply(outcome, banUntil)
  local out = { outcome, now, banUntil }
  for i = 1, nWindows do
    local w = windows[i]
    out[#out + 1] = w.limit
    if w.total == 0 then
      out[#out + 1] = w.limit
      out[#out + 1] = now
      out[#out + 1] = now + w.windowMs
    else
      out[#out + 1] = math.max(0, w.limit - w.total)
      out[#out + 1] = expiry(w, w.newest)
      out[#out + 1] = whenAtMost(w, math.min(w.total, w.limit) - 1)
    end
    out[#out + 1] = w.refused
  end
  for i = 1, #out do out[i] = int(out[i]) end -- exact integers (tostring would print 1e+15)
  table.insert(out, 4, plan)
  return table.concat(out, ' ')
end

-- Counts `n` requests in every window (admitted ones, or a fold).
local function count(n)
  for i = 1, nWindows do
    local w = windows[i]
    local total = int(w.total + n)
    if w.total == 0 then
      w.oldest, w.newest = w.current, w.current
      redis.call('HSET', w.key, int(w.current), n, 't', total, 'o', int(w.current), 'n', int(w.current))
      redis.call('PEXPIRE', w.key, int(math.max(1, expiry(w, w.newest) - now)))
    elseif w.current > w.newest then
      local previous = int(w.newest)
      w.newest = w.current
      redis.call('HSET', w.key, int(w.current), n, 'x' .. previous, int(w.current), 't', total, 'n', int(w.current))
      redis.call('PEXPIRE', w.key, int(math.max(1, expiry(w, w.newest) - now)))
    else
      -- The newest bucket (or, for a clock that stepped back, still the newest: never earlier).
      -- Its expiry, hence the key's TTL, is unchanged.
      local c = w.currentCount
      if w.current ~= w.newest then c = tonumber(redis.call('HGET', w.key, int(w.newest))) or 0 end
      redis.call('HSET', w.key, int(w.newest), int(c + n), 't', total)
    end
    w.total = w.total + n
  end
end

if weight > 0 then
  count(weight)
  return reply(0, 0)
end

if redis.call('EXISTS', REVOKED) == 1 then return reply(3, 0) end

if generation ~= '' then
  local r = redis.call('HMGET', RECORD, 'p', 'm', 'd', 'g', 'r' .. generation)
  local newest = tonumber(r[4])
  if newest and tonumber(generation) < newest and (tonumber(r[5]) or 0) <= now then return reply(4, 0) end
  if r[1] and r[2] and r[3] then
    plan = r[1]
    for i = 1, nWindows do
      local w = windows[i]
      if w.windowMs == 60000 then w.limit = tonumber(r[2]) elseif w.windowMs == 86400000 then w.limit = tonumber(r[3]) end
    end
  end
end

local banUntil = tonumber(redis.call('GET', BAN) or '0')
if banUntil > now then return reply(2, banUntil) end

local refused, retryAt = false, now
for i = 1, nWindows do
  local w = windows[i]
  if w.total + 1 > w.limit then
    w.refused = 1
    refused = true
    retryAt = math.max(retryAt, whenAtMost(w, w.limit - 1))
  end
end

if not refused then
  count(1)
  if generation ~= '' then
    redis.call('HSET', RECORD, 'lu', int(now))
    redis.call('PEXPIRE', RECORD, policy[#policy])
  end
  return reply(0, 0)
end

-- Refused: nothing is counted but a strike; enough strikes within the retry period ban.
if banAfter > 0 then
  local s = redis.call('HMGET', STRIKES, 'n', 'until')
  local n, strikesUntil = tonumber(s[1]) or 0, tonumber(s[2]) or 0
  if strikesUntil <= now then n, strikesUntil = 0, now end
  n = n + 1
  strikesUntil = math.max(strikesUntil, retryAt)
  if n >= banAfter then
    local o = redis.call('HMGET', OFFENCES, 'n', 'until')
    local offence = 1
    if (tonumber(o[2]) or 0) > now then offence = (tonumber(o[1]) or 0) + 1 end
    local length = math.min(banMs * 2 ^ (offence - 1), maxBanMs)
    banUntil = now + length
    redis.call('DEL', STRIKES)
    redis.call('SET', BAN, int(banUntil), 'PX', int(length))
    redis.call('HSET', OFFENCES, 'n', int(offence), 'until', int(banUntil + offenceMemoryMs))
    redis.call('PEXPIRE', OFFENCES, int(length + offenceMemoryMs))
    return reply(2, banUntil)
  end
  redis.call('HSET', STRIKES, 'n', int(n), 'until', int(strikesUntil))
  redis.call('PEXPIRE', STRIKES, int(strikesUntil - now))
end
return reply(1, 0)

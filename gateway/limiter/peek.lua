--[[
Pet Store API rate limiter, read only: one subject's standing now (GET /v1/me), as
sliding-window.lua would see it, without writing anything (no count, no strike, no last use,
expired buckets left for the next decision to drop). redis-store.ts calls it with EVALSHA.

KEYS and ARGV 1-3: as sliding-window.lua's.
Reply: as sliding-window.lua's, outcome 0 (admitted), 2 (banned), 3 (revoked) or 4 (rolled),
every window with refused 0.
]]

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
local nWindows = policy[5]
local REVOKED, BAN, RECORD = KEYS[1], KEYS[2], KEYS[5]
local generation = ARGV[3]

local function expiry(w, index) return (index + 1) * w.bucketMs + w.windowMs end

-- Each window's buckets that still count, oldest first: {index, count}.
local windows = {}
for i = 1, nWindows do
  local base = 5 + (i - 1) * 3
  local w = { windowMs = policy[base + 1], limit = policy[base + 2], bucketMs = policy[base + 3], total = 0, buckets = {} }
  local key = KEYS[5 + i]
  local head = redis.call('HMGET', key, 't', 'o', 'n')
  if (tonumber(head[1]) or 0) > 0 then
    local first = math.floor((now - w.windowMs) / w.bucketMs)
    local index = tonumber(head[2])
    while index do
      local field = int(index)
      local bucket = redis.call('HMGET', key, field, 'x' .. field)
      local count = tonumber(bucket[1]) or 0
      if index >= first and count > 0 then
        w.buckets[#w.buckets + 1] = { index, count }
        w.total = w.total + count
      end
      index = tonumber(bucket[2])
    end
  end
  windows[i] = w
end

-- Earliest instant >= now at which at most `target` of the counted requests still count.
local function whenAtMost(w, target)
  local left, at = w.total, now
  for _, bucket in ipairs(w.buckets) do
    if left <= target then return at end
    left = left - bucket[2]
    at = expiry(w, bucket[1])
  end
  return at
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
      out[#out + 1] = expiry(w, w.buckets[#w.buckets][1])
      out[#out + 1] = whenAtMost(w, math.min(w.total, w.limit) - 1)
    end
    out[#out + 1] = 0
  end
  for i = 1, #out do out[i] = int(out[i]) end
  table.insert(out, 4, plan)
  return table.concat(out, ' ')
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
return reply(0, 0)

-- bench/load.py's mixed workload for wrk (--client wrk): 70% verify, 20% records, 5% sign, 5% reads.
-- Run with one connection per wrk thread (-t N -c N), so request() and response() of a thread pair up and
-- each request's latency is timed here, per route (wrk's own histogram mixes the routes).
-- usage: wrk -t N -c N -d Ds -s bench/load.lua URL -- SETUP_FOLDER OUTPUT_FILE
-- SETUP_FOLDER (written by bench/load.py): verify.bin, sign.bin (multipart bodies), verify_type.txt and
-- sign_type.txt (their Content-Type), records.txt (one JSON body a line), ids.txt (record ids), api_key.txt,
-- expect.txt (Lua patterns, one a line, every verification answer must match). OUTPUT_FILE gets one
-- "route status ms ok" line a request.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } load_timespec;
int clock_gettime(int clock, load_timespec *now);
]]
local now_buffer = ffi.new("load_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, now_buffer) -- CLOCK_MONOTONIC
  return tonumber(now_buffer.tv_sec) * 1000 + tonumber(now_buffer.tv_nsec) / 1e6
end

local function read(path)
  local file = assert(io.open(path, "rb"))
  local text = file:read("*a")
  file:close()
  return text
end

local function lines(path)
  local out = {}
  for line in io.lines(path) do
    if #line > 0 then out[#out + 1] = line end
  end
  return out
end

local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("thread_number", counter)
  threads[#threads + 1] = thread
end

local verify_request, sign_request, record_requests, read_requests, expect
results = {} -- a global: done() reads each thread's with thread:get
local route, started, next_record = nil, 0, 0

function init(args)
  local folder = args[1]
  output_path = args[2]
  math.randomseed(os.time() * 1000 + thread_number)
  local key = read(folder .. "/api_key.txt")
  local auth = "Bearer " .. key
  expect = lines(folder .. "/expect.txt")
  verify_request = wrk.format("POST", "/v1/verify", {["Content-Type"] = read(folder .. "/verify_type.txt")},
                              read(folder .. "/verify.bin"))
  sign_request = wrk.format("POST", "/v1/sign", {["Content-Type"] = read(folder .. "/sign_type.txt"),
                            ["Authorization"] = auth}, read(folder .. "/sign.bin"))
  record_requests = {}
  for _, body in ipairs(lines(folder .. "/records.txt")) do
    record_requests[#record_requests + 1] = wrk.format("POST", "/v1/records",
      {["Content-Type"] = "application/json", ["Authorization"] = auth}, body)
  end
  read_requests = {}
  for _, id in ipairs(lines(folder .. "/ids.txt")) do
    read_requests[#read_requests + 1] = wrk.format("GET", "/v1/records/" .. id, {["Authorization"] = auth})
  end
  next_record = (thread_number * 37) % #record_requests
end

function request()
  local pick = math.random(100)
  local out
  if pick <= 70 then
    route, out = "verify", verify_request
  elseif pick <= 90 then
    next_record = next_record % #record_requests + 1
    route, out = "records", record_requests[next_record]
  elseif pick <= 95 then
    route, out = "sign", sign_request
  else
    route, out = "read", read_requests[math.random(#read_requests)]
  end
  started = now_ms()
  return out
end

function response(status, headers, body)
  local elapsed = now_ms() - started
  local ok = status >= 200 and status < 300
  if ok and route == "verify" then
    for _, pattern in ipairs(expect) do
      if not string.find(body, pattern) then ok = false end
    end
  end
  results[#results + 1] = string.format("%s %d %.3f %d", route, status, elapsed, ok and 1 or 0)
end

function done(summary, latency, requests)
  local output = assert(io.open(threads[1]:get("output_path"), "w"))
  for _, thread in ipairs(threads) do
    for _, line in ipairs(thread:get("results")) do output:write(line, "\n") end
  end
  output:close()
end

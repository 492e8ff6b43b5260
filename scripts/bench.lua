-- wrk driver of scripts/bench: the same scenarios as bench-load, every answer checked.
--
--   wrk -t N -c N -d S -s scripts/bench.lua URL -- SCENARIO PATH [LIST_MIN_TOTAL [SKILL_ID]]
--
-- SCENARIO is a2a-send, a2a-stream, lucid-invoke, list or health; PATH the route the requests go to
-- (the card's JSON-RPC interface path, the Lucid invoke route, or /health). SKILL_ID is the
-- `metadata.skillId` of the A2A messages (default echo; scripts/bench's accord-front-* servers
-- front a remote echo skill as front.echo). `health` GETs PATH,
-- and an answer must be HTTP 200 (any server: scripts/bench's tls-handshakes, with
-- `-H 'Connection: close'`). Each request carries a token
-- unique in the run; each answer must be HTTP 200, a completed task or run (for `list`, a page of
-- tasks) that echoes a token its thread sent and has not seen answered yet. (Answers are matched
-- by token, not by order: wrk calls the first thread's `request` once more than it sends, to check
-- the script.) An answer that fails its check counts as wrong, and the run prints the first; `done`
-- prints one JSON line that scripts/bench reads: requests, wrong answers, socket errors, latency
-- percentiles (µs).

local threads = {}

function setup(thread)
    thread:set("number", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    scenario = args[1]
    path = args[2]
    list_min_total = tonumber(args[3] or "1")
    skill_id = args[4] or "echo"
    sent = 0
    checked = 0
    pending = {}
    wrong = 0
    sample = ""
    if scenario == "health" then
        wrk.method = "GET"
        return
    end
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    if scenario ~= "lucid-invoke" then
        wrk.headers["A2A-Version"] = "1.0"
    end
    if scenario == "a2a-stream" then
        wrk.headers["Accept"] = "text/event-stream"
    end
end

local function token_of(n)
    return string.format("wrk-%d-%d", number, n)
end

local function message(method, n, token)
    return string.format(
        '{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"message":{"messageId":"m-%s","role":"ROLE_USER",'
            .. '"parts":[{"text":"{\\"text\\":\\"%s\\"}"}],"metadata":{"skillId":"%s"}}}}',
        n, method, token, token, skill_id)
end

function request()
    sent = sent + 1
    if scenario == "health" then
        return wrk.format(nil, path)
    end
    local token = token_of(sent)
    pending[token] = true
    local body
    if scenario == "a2a-send" then
        body = message("SendMessage", sent, token)
    elseif scenario == "a2a-stream" then
        body = message("SendStreamingMessage", sent, token)
    elseif scenario == "lucid-invoke" then
        body = string.format('{"input":{"text":"%s"}}', token)
    elseif scenario == "list" then
        body = string.format('{"jsonrpc":"2.0","id":%d,"method":"ListTasks","params":{"pageSize":50}}', sent)
    else
        error("unknown scenario " .. tostring(scenario))
    end
    return wrk.format(nil, path, nil, body)
end

local function has(body, text)
    return string.find(body, text, 1, true) ~= nil
end

-- Whether `body` is a right answer; an echoing one must echo `token`, which its thread sent.
local function right(status, body, token)
    if status ~= 200 then
        return false
    end
    if scenario == "health" then
        return true
    end
    if scenario ~= "list" then
        if token == nil or not pending[token] then
            return false
        end
        pending[token] = nil
    end
    if scenario == "a2a-send" then
        return has(body, '"result"') and not has(body, '"error"') and has(body, '"TASK_STATE_COMPLETED"')
            and has(body, token)
    elseif scenario == "a2a-stream" then
        -- The whole stream: a completed state last, the echo somewhere, no error event.
        return has(body, "data:") and not has(body, '"error"') and has(body, '"TASK_STATE_COMPLETED"')
            and has(body, token)
    elseif scenario == "lucid-invoke" then
        return has(body, '"succeeded"') and has(body, '"text":"' .. token .. '"')
    elseif scenario == "list" then
        local total = tonumber(string.match(body, '"totalSize":%s*(%d+)') or "-1")
        return has(body, '"result"') and has(body, '"tasks"') and total >= list_min_total
    end
    return false
end

function response(status, headers, body)
    checked = checked + 1
    local token = string.match(body, "wrk%-%d+%-%d+")
    if not right(status, body, token) then
        wrong = wrong + 1
        if sample == "" then
            sample = string.format("HTTP %d: %s", status, string.sub(body, 1, 300))
        end
    end
end

function done(summary, latency, requests)
    local wrong_total = 0
    local checked_total = 0
    local first = ""
    for _, thread in ipairs(threads) do
        wrong_total = wrong_total + thread:get("wrong")
        checked_total = checked_total + thread:get("checked")
        if first == "" then
            first = thread:get("sample")
        end
    end
    local errors = summary.errors
    io.write(string.format(
        '{"requests":%d,"checked":%d,"wrong":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,'
            .. '"write_errors":%d,"timeouts":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,'
            .. '"sample":"%s"}\n',
        summary.requests, checked_total, wrong_total, summary.duration, errors.connect, errors.read, errors.write,
        errors.timeout, errors.status, latency:percentile(50), latency:percentile(99), latency.mean,
        string.gsub(first, '[%c"\\]', " ")))
end

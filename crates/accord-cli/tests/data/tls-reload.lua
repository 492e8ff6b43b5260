-- wrk driver of test_tls_reload_under_load: keeps requests coming while the test swaps the
-- server's certificate, and counts what went wrong.
--
--   wrk -t 1 -c N -d S -s tls-reload.lua URL -- MODE
--
-- MODE `send` POSTs an A2A JSON-RPC SendMessage (echo skill, a message id unique in the run) to
-- /a2a/jsonrpc; an answer must be 2xx and a completed task. MODE `health` GETs /health; an answer
-- must be 2xx. `done` prints one JSON line: requests, answers that were not 2xx, 2xx answers that
-- were wrong, wrk's socket errors, and the first bad answer.

local threads = {}

function setup(thread)
    thread:set("number", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    mode = args[1]
    sent = 0
    answered = 0
    non2xx = 0
    wrong = 0
    sample = ""
    if mode == "send" then
        wrk.method = "POST"
        wrk.headers["Content-Type"] = "application/json"
        wrk.headers["A2A-Version"] = "1.0"
    elseif mode ~= "health" then
        error("unknown mode " .. tostring(mode))
    end
end

function request()
    sent = sent + 1
    if mode == "health" then
        return wrk.format("GET", "/health")
    end
    local body = string.format(
        '{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"reload-%d-%d",'
            .. '"role":"ROLE_USER","parts":[{"text":"{\\"text\\":\\"reload\\"}"}],"metadata":{"skillId":"echo"}}}}',
        sent, number, sent)
    return wrk.format(nil, "/a2a/jsonrpc", nil, body)
end

local function has(body, text)
    return string.find(body, text, 1, true) ~= nil
end

function response(status, headers, body)
    answered = answered + 1
    local bad = false
    if status < 200 or status > 299 then
        non2xx = non2xx + 1
        bad = true
    elseif mode == "send" and not (has(body, '"result"') and has(body, '"TASK_STATE_COMPLETED"')) then
        wrong = wrong + 1
        bad = true
    end
    if bad and sample == "" then
        sample = string.format("HTTP %d: %s", status, string.sub(body, 1, 200))
    end
end

function done(summary, latency, requests)
    local answered_total, non2xx_total, wrong_total, first = 0, 0, 0, ""
    for _, thread in ipairs(threads) do
        answered_total = answered_total + thread:get("answered")
        non2xx_total = non2xx_total + thread:get("non2xx")
        wrong_total = wrong_total + thread:get("wrong")
        if first == "" then
            first = thread:get("sample")
        end
    end
    local errors = summary.errors
    io.write(string.format(
        '{"requests":%d,"answered":%d,"non2xx":%d,"wrong":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,'
            .. '"status":%d,"sample":"%s"}\n',
        summary.requests, answered_total, non2xx_total, wrong_total, errors.connect, errors.read, errors.write,
        errors.timeout, errors.status, string.gsub(first, '[%c"\\]', " ")))
end

-- record/action presenting the token itself (TOKEN, a compact JWT, from the
-- environment) as Authorization: Bearer: the server checks its signature once
-- per key refresh and its lifetime on every call.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.body = '{"action":"read","resource":"crm:contacts","result":"success"}'

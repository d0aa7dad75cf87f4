-- record/action presenting the token itself (TOKEN, a compact JWT, from the
-- environment) as Authorization: Bearer: the server checks its signature on
-- every call, on the HTTP workers.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.body = '{"action":"read","resource":"crm:contacts","result":"success"}'

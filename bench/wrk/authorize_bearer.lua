-- authorize presenting the token itself (TOKEN, a compact JWT, from the
-- environment) as Authorization: Bearer: a pending record each call.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.body = '{"action":"read","resource":"crm:contacts"}'

-- record/action on one token (JTI from the environment) reporting a failed
-- action: each one is a `record.failed` event when events are on.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"vat_jti":"' .. os.getenv("JTI") .. '","action":"read","resource":"crm:contacts","result":"error"}'

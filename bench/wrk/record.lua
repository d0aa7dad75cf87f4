-- record/action on one token (JTI from the environment), as an agent on the
-- simple path calls it.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"vat_jti":"' .. os.getenv("JTI") .. '","action":"read","resource":"crm:contacts","result":"success"}'

-- record/action of `send` on mail:outbox on one token (JTI from the
-- environment) with the same arguments every time (ARGS, JSON text from the
-- environment: bench/args/grant.json's 1 KiB).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"vat_jti":"' .. os.getenv("JTI") .. '","action":"send","resource":"mail:outbox","result":"success","args":' .. os.getenv("ARGS") .. '}'

-- Delegation: each request delegates a narrower child from one parent token
-- (JTI from the environment); the server signs and stores the child and
-- records the delegation.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"vat_jti":"' .. os.getenv("JTI") .. '","agent_id":"helper","resources":["crm:contacts"],"actions":["read"]}'

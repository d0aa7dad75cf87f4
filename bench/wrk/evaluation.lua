-- An AuthZEN evaluation by a gateway (KEY, a gateway API key, from the
-- environment) of the same act as authorize_bearer.lua, the agent's token
-- (TOKEN) as the subject: a completed record of origin evaluation each call.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")
wrk.body = '{"subject":{"type":"mandate_vat","id":"' .. os.getenv("TOKEN") ..
  '"},"action":{"name":"read"},"resource":{"type":"crm","id":"contacts"}}'

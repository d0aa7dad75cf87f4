-- The full-control path: authorize (a pending record), then complete it.
-- Each thread keeps the authorized records it has yet to complete; every
-- request completes one when there is one, else authorizes the next.
local headers = { ["Content-Type"] = "application/json" }
local authorize = '{"vat_jti":"' .. os.getenv("JTI") .. '","action":"read","resource":"crm:contacts"}'
local complete = '{"result":"success"}'
local pending = {}

request = function()
  local id = table.remove(pending)
  if id then
    return wrk.format("POST", "/v1/vat/aar/" .. id .. "/complete", headers, complete)
  end
  return wrk.format("POST", "/v1/vat/authorize", headers, authorize)
end

response = function(status, _, body)
  if status == 200 then
    local id = body:match('"authorized":true,"aar_id":"(aar_[0-9a-z]+)"')
    if id then
      table.insert(pending, id)
    end
  end
end

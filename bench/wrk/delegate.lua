-- Delegation: each request delegates a narrower child from a parent token
-- presented itself (Authorization: Bearer), taking the parents of PARENTS (a
-- file, one compact token a line) in turn, since a token may have at most
-- 1000 children. The server checks the parent's signature, signs and stores
-- the child, and records the delegation. Each parent names a sub-agent of
-- its own (an agent id registered under another agent is not its to name).
local parents = {}
for line in io.lines(os.getenv("PARENTS")) do
  parents[#parents + 1] = line
end
local next_parent = math.random(#parents)

request = function()
  next_parent = next_parent % #parents + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. parents[next_parent],
  }
  local body = '{"agent_id":"helper-' .. next_parent .. '","resources":["crm:contacts"],"actions":["read"]}'
  return wrk.format("POST", "/v1/vat/delegate", headers, body)
end

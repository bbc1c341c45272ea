// Password rules (product §18) on both stores: length, whitespace only and common passwords are refused at acceptance and change, and nothing changes.
import { beforeAll, describe, expect, it } from "vitest";
import { invitedUser, inviteToken, PASSWORD, signIn } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem } from "../support/server.ts";

let merchantId: string;

const server = useTestServer();
beforeAll(async () => {
  merchantId = (await createMerchant(server)).id;
});

const REFUSED: [string, string][] = [
  ["short", "password_too_short"],
  ["            ", "password_blank"],
  ["\t \u00a0\u2003        \n", "password_blank"],
  ["password1234", "password_too_common"],
  ["iloveyou1234", "password_too_common"],
  ["qwertyuiop12", "password_too_common"],
  ["aaaaaaaaaaaaaaaa", "password_too_common"],
  ["abcdefghijklmnop", "password_too_common"],
];

describe("password rules", () => {
  it("an invitation is not accepted with a short, blank or common password, and stays usable", async () => {
    const email = `p-${Date.now()}@example.com`;
    const invited = await admin(server, "POST", `/merchants/${merchantId}/users`, { email, role: "viewer" });
    const token = inviteToken(invited.body.inviteUrl);
    for (const [password, code] of REFUSED) {
      const answer = await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
        body: { token, password },
      });
      expectProblem(answer, 400, code);
      expect(answer.body.errors[0].pointer).toBe("/password");
    }
    expectProblem(await signIn(server, email, "password1234"), 401, "signin_failed");
    const accepted = await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
      body: { token, password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
  });

  it("a password is not changed to a short, blank or common one", async () => {
    const user = await invitedUser(server, merchantId, "viewer");
    for (const [newPassword, code] of REFUSED) {
      const answer = await user.call("POST", "/account/password", { currentPassword: PASSWORD, newPassword });
      expectProblem(answer, 400, code);
      expect(answer.body.errors[0].pointer).toBe("/newPassword");
    }
    expect((await signIn(server, user.email, PASSWORD)).status).toBe(200);
    expectProblem(await signIn(server, user.email, "password1234"), 401, "signin_failed");
    const newPassword = "tangerine orbit lantern";
    expect((await user.call("POST", "/account/password", { currentPassword: PASSWORD, newPassword })).status).toBe(200);
    expect((await signIn(server, user.email, newPassword)).status).toBe(200);
  });
});

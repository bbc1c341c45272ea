// Bundle entry of the payer's pages: their style and their script (the invoice's page, a subscription's, a customer's deposit address).
import "./pay.css";
import "./main.ts";
import "./subscription.css";
import "./subscription.ts";
import "./deposit.css";

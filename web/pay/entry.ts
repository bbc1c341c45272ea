// Bundle entry of the payer's pages: their style and their script (the invoice's page, and a subscription's).
import "./pay.css";
import "./main.ts";
import "./subscription.css";
import "./subscription.ts";
